// What the client needs to know about one resource to build every URL for it (group,
// version, plural, namespaced) and to decide what may be done (verbs). It lives in core
// because request building depends on it and core must not depend on discovery;
// discovery fills it in (discovery/api_resource.hpp forwards here).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/gvk.hpp"

namespace kstate {

struct ApiResource {
  std::string group;  // "" for core
  std::string version;
  std::string kind;
  std::string plural;    // URL segment, e.g. deployments
  std::string singular;  // e.g. deployment
  bool namespaced = false;
  std::vector<std::string> verbs;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> subresources;  // e.g. status, scale
  bool preferred_version = true;          // this version is the group's preferred one

  GroupVersionKind gvk() const { return {group, version, kind}; }
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  bool supports(std::string_view verb) const;
  bool has_subresource(std::string_view name) const;
};

}  // namespace kstate
