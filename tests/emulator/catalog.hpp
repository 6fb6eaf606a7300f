// The emulator's catalog of resource types: the built-in kinds kube-apiserver 1.32
// serves (with their scope, short names, categories, verbs and subresources, in
// discovery order: recordings 04 and 06) plus the kinds CustomResourceDefinitions add
// at run time. Discovery documents and request
// routing are both derived from it, so they can never disagree.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace kstate::emulator {

// A subresource as discovery lists it: "status" and "scale" are served, the others
// (pods/log, pods/exec, serviceaccounts/token...) are listed only (there is no kubelet).
struct Subresource {
  std::string name;
  std::string group;  // of the kind it answers with, when not the resource's own ("autoscaling" for scale)
  std::string version;
  std::string kind;
  std::vector<std::string> verbs;
};

struct ResourceType {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  std::string plural;
  std::string singular;
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> verbs;
  std::vector<std::string> categories;
  std::vector<Subresource> subresources;
  bool has_status = false;
  bool has_scale = false;
  // Top-level fields the kind knows besides apiVersion/kind/metadata; used by
  // fieldValidation for built-ins. Empty for CRDs (their schema decides).
  std::vector<std::string> top_level_fields;
  // Whether objects of the kind are stored (discovery's storageVersionHash): not the
  // reviews (create only) nor componentstatuses (computed).
  bool stored = true;
  // For custom resources: the CRD's openAPIV3Schema for this version (null when none).
  std::shared_ptr<const json::Document> schema;
  bool custom = false;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "deployments.apps" / "configmaps": the form kube-apiserver uses in messages.
  std::string qualified_plural() const { return group.empty() ? plural : plural + "." + group; }
  std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
};

// The default verb set of a fully featured resource.
std::vector<std::string> standard_verbs();

class Catalog {
 public:
  Catalog();  // the built-in kinds

  const ResourceType* find(std::string_view group, std::string_view version, std::string_view plural) const;
  const ResourceType* find_kind(std::string_view group, std::string_view version, std::string_view kind) const;
  // Every type, built-in first, in a stable order.
  std::vector<const ResourceType*> all() const;
  // Groups in discovery order with their versions (only one version per built-in group).
  std::vector<std::string> groups() const;
  std::vector<std::string> versions_of(std::string_view group) const;

  // Custom resources, keyed by CRD name ("widgets.example.com").
  void set_custom(const std::string& crd_name, std::vector<ResourceType> types);
  void remove_custom(const std::string& crd_name);
  bool has_custom(const std::string& crd_name) const { return custom_.count(crd_name) > 0; }
  // Bumped on every change so discovery ETags change with content.
  unsigned generation() const { return generation_; }

 private:
  std::vector<ResourceType> builtin_;
  std::map<std::string, std::vector<ResourceType>> custom_;
  unsigned generation_ = 0;
};

}  // namespace kstate::emulator
