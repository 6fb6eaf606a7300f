// JSON and text renderings of the inventory (see inventory_report.hpp).
#include "daemon/inventory_report.hpp"

#include <rapidjson/prettywriter.h>

#include <optional>
#include <vector>

#include "core/strings.hpp"
#include "daemon/text_table.hpp"
#include "inventory/quantity.hpp"

namespace kstate::daemon {
namespace {

using inventory::Container;
using inventory::DigestKind;
using inventory::Image;
using inventory::Inventory;
// RapidJSON's output stream concept over a std::ostream, written 64 KiB at a time
// (rapidjson::OStreamWrapper puts one byte at a time: 6 MB took ~0.4 s more).
class BufferedOutput {
 public:
  using Ch = char;
  explicit BufferedOutput(std::ostream& out) : out_(out) { buffer_.reserve(capacity); }
  BufferedOutput(const BufferedOutput&) = delete;
  BufferedOutput& operator=(const BufferedOutput&) = delete;
  ~BufferedOutput() { Flush(); }
  void Put(char c) {
    buffer_.push_back(c);
    if (buffer_.size() == capacity) {
      Flush();
    }
  }
  void Flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

 private:
  static constexpr std::size_t capacity = 64 * 1024;
  std::ostream& out_;
  std::string buffer_;
};
using Writer = rapidjson::PrettyWriter<BufferedOutput>;

void string_field(Writer& writer, const char* key, std::string_view value) {
  writer.Key(key);
  writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

template <class Strings>
void strings_field(Writer& writer, const char* key, const Strings& values) {
  writer.Key(key);
  writer.StartArray();
  for (const auto& value : values) {
    writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  }
  writer.EndArray();
}

void number_or_null(Writer& writer, const char* key, std::optional<std::int64_t> value) {
  writer.Key(key);
  if (value) {
    writer.Int64(*value);
  } else {
    writer.Null();
  }
}

void resources_field(Writer& writer, const char* key, const inventory::Resources& resources) {
  writer.Key(key);
  writer.StartObject();
  string_field(writer, "cpu", resources.cpu);
  string_field(writer, "memory", resources.memory);
  number_or_null(writer, "cpuMillicores", inventory::quantity_millis(resources.cpu));
  number_or_null(writer, "memoryBytes", inventory::quantity_units(resources.memory));
  writer.EndObject();
}

void container_fields(Writer& writer, const Container& container) {
  string_field(writer, "namespace", container.namespace_name);
  string_field(writer, "pod", container.pod);
  string_field(writer, "container", container.name);
  string_field(writer, "type", inventory::to_string(container.type));
  string_field(writer, "node", container.node);
  string_field(writer, "phase", container.phase);
  string_field(writer, "image", container.image);
  string_field(writer, "state", container.state);
  string_field(writer, "reason", container.reason);
}

void write_nodes(Writer& writer, const Inventory& inventory) {
  writer.Key("nodes");
  writer.StartArray();
  for (const auto& node : inventory.nodes()) {
    writer.StartObject();
    string_field(writer, "name", node.name);
    strings_field(writer, "roles", node.roles);
    writer.Key("ready");
    writer.StartObject();
    string_field(writer, "status", node.ready.status);
    string_field(writer, "reason", node.ready.reason);
    string_field(writer, "since", node.ready.since);
    writer.EndObject();
    string_field(writer, "architecture", node.architecture);
    string_field(writer, "operatingSystem", node.operating_system);
    string_field(writer, "osImage", node.os_image);
    string_field(writer, "kernelVersion", node.kernel_version);
    string_field(writer, "containerRuntime", node.container_runtime);
    string_field(writer, "containerRuntimeVersion", node.container_runtime_version);
    string_field(writer, "kubeletVersion", node.kubelet_version);
    resources_field(writer, "capacity", node.capacity);
    resources_field(writer, "allocatable", node.allocatable);
    writer.EndObject();
  }
  writer.EndArray();
}

void write_images(Writer& writer, const Inventory& inventory) {
  writer.Key("images");
  writer.StartArray();
  for (const auto& [key, image] : inventory.images()) {
    writer.StartObject();
    string_field(writer, "digest", image.digest);
    string_field(writer, "kind", inventory::to_string(image.kind));
    if (image.kind == DigestKind::unknown) {
      string_field(writer, "imageID", image.unknown_image_id);
    }
    strings_field(writer, "repositories", image.repositories);
    strings_field(writer, "references", image.references);
    strings_field(writer, "runtimes", image.runtimes);
    writer.Key("containers");
    writer.StartArray();
    for (const auto& container : image.containers) {
      writer.StartObject();
      container_fields(writer, container);
      string_field(writer, "since", container.since);
      writer.Key("ready");
      writer.Bool(container.ready);
      string_field(writer, "imageID", container.image_id);
      string_field(writer, "runtime", container.runtime);
      writer.EndObject();
    }
    writer.EndArray();
    writer.EndObject();
  }
  writer.EndArray();
}

std::string or_none(std::string_view text) {
  return text.empty() ? std::string("<none>") : std::string(text);
}

std::string place(const Container& container) {
  return std::string(container.namespace_name) + "/" + std::string(container.pod) + "/" + std::string(container.name);
}

std::string state_text(const Container& container) {
  std::string text = or_none(container.state);
  if (!container.reason.empty()) {
    text += " (" + std::string(container.reason) + ")";
  }
  return text;
}

std::string scope_text(const inventory::Scope& scope) {
  return scope.all_namespaces ? "all namespaces" : "namespace " + scope.namespace_name;
}

const char* kind_text(DigestKind kind) {
  switch (kind) {
    case DigestKind::repo_digest:
      return "repo digest";
    case DigestKind::image_id:
      return "local image ID";
    default:
      return "unknown imageID form";
  }
}

void print_nodes(const Inventory& inventory, std::ostream& out) {
  out << "NODES (" << inventory.nodes().size() << ")\n";
  std::vector<std::vector<std::string>> rows{{"NAME", "ROLES", "READY", "ARCH", "OS IMAGE", "KERNEL", "RUNTIME",
                                              "KUBELET", "CPU", "CPU ALLOCATABLE", "MEMORY", "MEMORY ALLOCATABLE"}};
  for (const auto& node : inventory.nodes()) {
    std::string roles;
    for (const auto& role : node.roles) {
      roles += (roles.empty() ? "" : ",") + role;
    }
    std::string runtime =
        node.container_runtime + (node.container_runtime_version.empty() ? "" : " " + node.container_runtime_version);
    rows.push_back({node.name, or_none(roles), or_none(node.ready.status), or_none(node.architecture),
                    or_none(node.os_image), or_none(node.kernel_version), or_none(runtime),
                    or_none(node.kubelet_version), or_none(node.capacity.cpu), or_none(node.allocatable.cpu),
                    or_none(node.capacity.memory), or_none(node.allocatable.memory)});
  }
  print_table(rows, out);
}

void print_containers(const std::vector<Container>& containers, bool not_started, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  if (not_started) {
    rows.push_back({"NAMESPACE/POD/CONTAINER", "TYPE", "NODE", "PHASE", "STATE", "IMAGE"});
  } else {
    rows.push_back({"NAMESPACE/POD/CONTAINER", "TYPE", "NODE", "PHASE", "STATE", "SINCE"});
  }
  for (const auto& container : containers) {
    rows.push_back({place(container), inventory::to_string(container.type), or_none(container.node),
                    or_none(container.phase), state_text(container),
                    not_started ? std::string(container.image) : or_none(container.since)});
  }
  print_table(rows, out, "  ");
}

}  // namespace

void write_inventory_json(const Inventory& inventory, const InventoryRun& run, std::ostream& out) {
  BufferedOutput stream(out);
  Writer writer(stream);
  writer.SetIndent(' ', 2);
  writer.StartObject();
  writer.Key("schemaVersion");
  writer.Int(1);
  writer.Key("scope");
  writer.StartObject();
  writer.Key("allNamespaces");
  writer.Bool(inventory.scope().all_namespaces);
  string_field(writer, "namespace", inventory.scope().all_namespaces ? "" : inventory.scope().namespace_name);
  string_field(writer, "image", inventory.filter().repository);
  writer.EndObject();
  write_nodes(writer, inventory);
  write_images(writer, inventory);
  writer.Key("notStarted");
  writer.StartArray();
  for (const auto& container : inventory.not_started()) {
    writer.StartObject();
    container_fields(writer, container);
    writer.EndObject();
  }
  writer.EndArray();
  writer.Key("digests");
  writer.StartArray();
  for (const auto& answer : inventory.digest_answers()) {
    writer.StartObject();
    string_field(writer, "digest", answer.query.digest);
    string_field(writer, "asked", answer.query.text);
    writer.Key("found");
    writer.Bool(answer.found());
    writer.Key("repoDigestMatches");
    writer.Uint64(answer.repo_digest_matches);
    writer.Key("imageIDMatches");
    writer.Uint64(answer.image_id_matches);
    writer.EndObject();
  }
  writer.EndArray();
  writer.Key("incomplete");
  writer.StartArray();
  for (const auto& problem : inventory.problems()) {
    writer.StartObject();
    string_field(writer, "resource", problem.resource);
    string_field(writer, "verb", problem.verb);
    string_field(writer, "namespace", problem.namespace_name);
    writer.Key("code");
    writer.Int(problem.code);
    string_field(writer, "reason", problem.reason);
    string_field(writer, "message", problem.message);
    writer.EndObject();
  }
  writer.EndArray();
  writer.Key("counts");
  writer.StartObject();
  writer.Key("nodes");
  writer.Uint64(inventory.counts().nodes);
  writer.Key("pods");
  writer.Uint64(inventory.counts().pods);
  writer.Key("containers");
  writer.Uint64(inventory.counts().containers);
  writer.Key("images");
  writer.Uint64(inventory.images().size());
  writer.Key("notStarted");
  writer.Uint64(inventory.not_started().size());
  writer.Key("requests");
  writer.Uint64(run.requests);
  writer.EndObject();
  writer.EndObject();
  stream.Put('\n');
}

void print_inventory_text(const Inventory& inventory, const InventoryRun& run, std::ostream& out) {
  bool digests_asked = !inventory.digest_answers().empty();
  if (digests_asked) {
    for (const auto& answer : inventory.digest_answers()) {
      std::size_t containers = answer.repo_digest_matches + answer.image_id_matches;
      out << answer.query.text << ": ";
      if (!answer.found()) {
        out << "runs nowhere in " << scope_text(inventory.scope()) << "\n";
        continue;
      }
      out << "runs in " << containers << (containers == 1 ? " container" : " containers");
      if (answer.repo_digest_matches > 0 && answer.image_id_matches > 0) {
        out << " (" << answer.repo_digest_matches << " as repo digest, " << answer.image_id_matches
            << " as local image ID)";
      } else {
        out << " (as " << (answer.repo_digest_matches > 0 ? "repo digest" : "local image ID") << ")";
      }
      out << "\n";
    }
    out << "\n";
  } else {
    print_nodes(inventory, out);
    out << "\n";
  }
  out << "IMAGES (" << inventory.images().size() << (inventory.images().size() == 1 ? " digest" : " digests")
      << ", pods of " << scope_text(inventory.scope())
      << (inventory.filter().repository.empty() ? "" : ", repository " + inventory.filter().repository) << ")\n";
  for (const auto& [key, image] : inventory.images()) {
    out << "\n" << (image.kind == DigestKind::unknown ? image.unknown_image_id : image.digest) << "\n";
    out << "  " << kind_text(image.kind) << (image.runtimes.empty() ? "" : ", " + strings::join(image.runtimes, ", "))
        << "\n";
    if (!image.repositories.empty()) {
      out << "  repository: " << strings::join(image.repositories, ", ") << "\n";
    }
    out << "  asked as: " << strings::join(image.references, ", ") << "\n";
    print_containers(image.containers, false, out);
  }
  if (!inventory.not_started().empty()) {
    out << "\nNOT STARTED (" << inventory.not_started().size() << ")\n";
    print_containers(inventory.not_started(), true, out);
  }
  if (!inventory.problems().empty()) {
    out << "\nINCOMPLETE\n";
    for (const auto& problem : inventory.problems()) {
      out << "  " << problem.verb << " " << problem.resource
          << (problem.namespace_name.empty() ? "" : " in namespace " + problem.namespace_name) << ": "
          << problem.message << "\n";
    }
  }
  const auto& counts = inventory.counts();
  out << "\nread " << counts.nodes << (counts.nodes == 1 ? " node" : " nodes") << " and " << counts.pods
      << (counts.pods == 1 ? " pod" : " pods") << " (" << counts.containers
      << (counts.containers == 1 ? " container" : " containers") << ") in " << run.requests
      << (run.requests == 1 ? " request" : " requests") << "\n";
}

}  // namespace kstate::daemon
