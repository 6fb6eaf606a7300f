// The answer of `kstate inventory`: the cluster's nodes, and for each distinct image
// digest where it runs (namespace/pod/container, node, phase, since when), plus the
// containers that have not started. It is built page by page from LIST answers
// (add_nodes, add_pods) and keeps only the fields it reports, so memory holds the
// summary, not the cluster: a page is read and dropped by the caller. Names that repeat
// across thousands of pods (namespaces, nodes, images, phases) are stored once.
// Pure: JSON values in, plain values out; items are read without their kind/apiVersion,
// which list answers leave out.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "inventory/image_id.hpp"

namespace kstate::inventory {

struct Resources {
  std::string cpu;     // as the API returns it, e.g. "4" or "3800m"
  std::string memory;  // e.g. "16331016Ki"
};

struct ReadyCondition {
  std::string status;  // "True", "False", "Unknown"; "" when the node reports no Ready condition
  std::string reason;
  std::string since;  // lastTransitionTime
};

struct Node {
  std::string name;
  std::vector<std::string> roles;  // from node-role.kubernetes.io/<role> and kubernetes.io/role labels
  ReadyCondition ready;
  std::string architecture;
  std::string operating_system;
  std::string os_image;
  std::string kernel_version;
  std::string container_runtime;          // "containerd", from "containerd://1.7.12"
  std::string container_runtime_version;  // "1.7.12"
  std::string kubelet_version;
  Resources capacity;
  Resources allocatable;
};

enum class ContainerType { container, init, ephemeral };
const char* to_string(ContainerType type);  // "container", "init", "ephemeral"

// One container of one pod. The views point into the Inventory's own strings.
struct Container {
  std::string_view namespace_name;
  std::string_view pod;
  std::string_view name;
  ContainerType type = ContainerType::container;
  std::string_view node;   // spec.nodeName; "" while not scheduled
  std::string_view phase;  // the pod's status.phase
  std::string_view image;  // the reference the pod asked for
  std::string_view image_id;
  std::string_view runtime;
  std::string_view state;   // "running", "waiting", "terminated"; "" without a status
  std::string_view reason;  // of a waiting or terminated state
  // running: startedAt; terminated: finishedAt; waiting: the last termination's finishedAt, if any.
  std::string_view since;
  bool ready = false;
};

// One distinct digest (or, for an unknown form, one distinct imageID) and where it runs.
struct Image {
  DigestKind kind = DigestKind::unknown;
  std::string digest;            // empty for DigestKind::unknown
  std::string unknown_image_id;  // the verbatim imageID of DigestKind::unknown
  std::set<std::string> repositories;
  std::set<std::string> references;  // what pods asked for
  std::set<std::string> runtimes;
  std::vector<Container> containers;  // sorted by namespace, pod, type, name once finished
};

// What to keep. Empty: everything.
struct Filter {
  std::vector<DigestQuery> digests;  // --digest
  std::string repository;            // --image, as normalize_repository gives it
};

struct Scope {
  bool all_namespaces = false;
  std::string namespace_name;  // when not all_namespaces
};

// A --digest and how many containers run it.
struct DigestAnswer {
  DigestQuery query;
  std::size_t repo_digest_matches = 0;
  std::size_t image_id_matches = 0;
  bool found() const { return repo_digest_matches + image_id_matches > 0; }
};

// Something that could not be read (e.g. a 403 on nodes): the rest is still reported.
struct Problem {
  std::string resource;  // "nodes", "pods"
  std::string verb;      // "list"
  std::string namespace_name;
  int code = 0;  // HTTP status; 0 without an answer
  std::string reason;
  std::string message;
};

struct Counts {
  std::size_t nodes = 0;
  std::size_t pods = 0;        // pods seen in the scope, before any filter
  std::size_t containers = 0;  // containers seen in the scope, before any filter
};

class Inventory {
 public:
  Inventory(Scope scope, Filter filter);
  Inventory(Inventory&&) = default;
  Inventory& operator=(Inventory&&) = default;

  // One page of a LIST answer (a NodeList / PodList). An answer without an items array is an error.
  Status add_nodes(const json::Value& list);
  Status add_pods(const json::Value& list);
  void add_problem(Problem problem) { problems_.push_back(std::move(problem)); }
  // Sorts what was added; call once, after the last page.
  void finish();

  const Scope& scope() const { return scope_; }
  const Filter& filter() const { return filter_; }
  const std::vector<Node>& nodes() const { return nodes_; }  // by name
  // By kind (repo digests, image IDs, unknown forms), then digest or imageID.
  const std::map<std::pair<DigestKind, std::string>, Image>& images() const { return images_; }
  const std::vector<Container>& not_started() const { return not_started_; }    // by namespace, pod, type, name
  const std::vector<DigestAnswer>& digest_answers() const { return answers_; }  // in the order asked
  const std::vector<Problem>& problems() const { return problems_; }
  const Counts& counts() const { return counts_; }
  // Every --digest given was found running.
  bool every_digest_found() const;

 private:
  std::string_view keep(std::string_view text);
  void add_pod(const json::Value& pod);
  void add_container(Container container, std::string_view status_image, std::string_view container_id);
  bool wanted_repository(std::string_view image, std::string_view status_image, const ImageId& image_id) const;

  Scope scope_;
  Filter filter_;
  // Looked up by view (no string made to find one); node-based, so views into it stay
  // valid as it grows and when the inventory moves.
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::unordered_set<std::string, TextHash, std::equal_to<>> strings_;
  std::vector<Node> nodes_;
  std::map<std::pair<DigestKind, std::string>, Image> images_;
  std::vector<Container> not_started_;
  std::vector<DigestAnswer> answers_;
  std::vector<Problem> problems_;
  Counts counts_;
};

}  // namespace kstate::inventory
