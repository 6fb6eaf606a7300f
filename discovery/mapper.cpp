// Look-ups over the discovered resources.
#include "discovery/mapper.hpp"

#include <algorithm>
#include <cctype>

namespace kstate::discovery {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool names_resource(const ApiResource& resource, std::string_view name) {
  if (equals_ignoring_case(resource.plural, name) || equals_ignoring_case(resource.singular, name) ||
      equals_ignoring_case(resource.kind, name)) {
    return true;
  }
  return std::any_of(resource.short_names.begin(), resource.short_names.end(),
                     [&](const std::string& short_name) { return equals_ignoring_case(short_name, name); });
}

}  // namespace

ResourceMapper::ResourceMapper(std::vector<ApiResource> resources) : resources_(std::move(resources)) {
  // Preferred versions first, so every "first match" is the preferred one.
  std::stable_sort(resources_.begin(), resources_.end(), [](const ApiResource& a, const ApiResource& b) {
    return a.preferred_version && !b.preferred_version;
  });
}

const ApiResource* ResourceMapper::find(const GroupVersionKind& gvk) const {
  for (const auto& resource : resources_) {
    if (resource.group == gvk.group && resource.version == gvk.version && resource.kind == gvk.kind) {
      return &resource;
    }
  }
  return nullptr;
}

const ApiResource* ResourceMapper::find_preferred(std::string_view group, std::string_view kind) const {
  for (const auto& resource : resources_) {
    if (resource.group == group && resource.kind == kind) {
      return &resource;
    }
  }
  return nullptr;
}

std::vector<const ApiResource*> ResourceMapper::lookup(std::string_view name) const {
  std::vector<const ApiResource*> out;
  // Split "resource[.version][.group]": try the whole name first, then qualified forms.
  for (const auto& resource : resources_) {
    if (names_resource(resource, name)) {
      out.push_back(&resource);
    }
  }
  if (!out.empty()) {
    return out;
  }
  auto dot = name.find('.');
  if (dot == std::string_view::npos) {
    return out;
  }
  auto head = name.substr(0, dot);
  auto rest = name.substr(dot + 1);
  for (const auto& resource : resources_) {
    if (!names_resource(resource, head)) {
      continue;
    }
    if (resource.group == rest || resource.version + "." + resource.group == rest) {
      out.push_back(&resource);
    }
  }
  return out;
}

}  // namespace kstate::discovery
