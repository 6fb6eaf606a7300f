// Folding LIST pages of nodes and pods into the inventory (see summary.hpp).
#include "inventory/summary.hpp"

#include <algorithm>
#include <tuple>

namespace kstate::inventory {
namespace {

std::string_view text_at(const json::Value& object, std::initializer_list<std::string_view> path) {
  return json::string_or(json::find_path(object, path), "");
}

const json::Value* array_at(const json::Value& object, std::initializer_list<std::string_view> path) {
  const json::Value* value = json::find_path(object, path);
  return value != nullptr && value->IsArray() ? value : nullptr;
}

Status items_of(const json::Value& list, std::string_view resource, const json::Value*& items) {
  items = list.IsObject() ? json::find(list, "items") : nullptr;
  if (items == nullptr || !items->IsArray()) {
    return Error(ErrorKind::invalid, "the server's answer to LIST " + std::string(resource) + " has no items array");
  }
  return ok_status();
}

std::vector<std::string> roles_of(const json::Value& node) {
  std::set<std::string> roles;
  if (const json::Value* labels = json::find_path(node, {"metadata", "labels"});
      labels != nullptr && labels->IsObject()) {
    static constexpr std::string_view prefix = "node-role.kubernetes.io/";
    for (const auto& label : labels->GetObject()) {
      std::string_view key(label.name.GetString(), label.name.GetStringLength());
      if (key.starts_with(prefix) && key.size() > prefix.size()) {
        roles.emplace(key.substr(prefix.size()));
      } else if (key == "kubernetes.io/role" && label.value.IsString() && label.value.GetStringLength() > 0) {
        roles.emplace(label.value.GetString(), label.value.GetStringLength());
      }
    }
  }
  return {roles.begin(), roles.end()};
}

// The container's state as reported: which one, its reason, and since when.
struct StateView {
  std::string_view state;
  std::string_view reason;
  std::string_view since;
};

StateView state_of(const json::Value& status) {
  if (const json::Value* running = json::find_path(status, {"state", "running"}); running != nullptr) {
    return {"running", "", text_at(*running, {"startedAt"})};
  }
  if (const json::Value* terminated = json::find_path(status, {"state", "terminated"}); terminated != nullptr) {
    return {"terminated", text_at(*terminated, {"reason"}), text_at(*terminated, {"finishedAt"})};
  }
  if (const json::Value* waiting = json::find_path(status, {"state", "waiting"}); waiting != nullptr) {
    return {"waiting", text_at(*waiting, {"reason"}), text_at(status, {"lastState", "terminated", "finishedAt"})};
  }
  return {};
}

int type_order(ContainerType type) {
  return type == ContainerType::init ? 0 : type == ContainerType::container ? 1 : 2;
}

bool container_before(const Container& a, const Container& b) {
  return std::forward_as_tuple(a.namespace_name, a.pod, type_order(a.type), a.name) <
         std::forward_as_tuple(b.namespace_name, b.pod, type_order(b.type), b.name);
}

// The digest a reference pins ("app@sha256:..." -> "sha256:..."), or "".
std::string_view pinned_digest(std::string_view reference) {
  auto at = reference.rfind('@');
  return at == std::string_view::npos ? std::string_view() : reference.substr(at + 1);
}

}  // namespace

const char* to_string(ContainerType type) {
  switch (type) {
    case ContainerType::container:
      return "container";
    case ContainerType::init:
      return "init";
    case ContainerType::ephemeral:
      return "ephemeral";
  }
  return "container";
}

Inventory::Inventory(Scope scope, Filter filter) : scope_(std::move(scope)), filter_(std::move(filter)) {
  for (const auto& query : filter_.digests) {
    bool repeated = std::any_of(answers_.begin(), answers_.end(),
                                [&](const DigestAnswer& answer) { return answer.query.digest == query.digest; });
    if (!repeated) {
      answers_.push_back(DigestAnswer{query});
    }
  }
}

std::string_view Inventory::keep(std::string_view text) {
  if (text.empty()) {
    return {};
  }
  if (auto found = strings_.find(text); found != strings_.end()) {
    return *found;
  }
  return *strings_.emplace(text).first;
}

bool Inventory::every_digest_found() const {
  return std::all_of(answers_.begin(), answers_.end(), [](const DigestAnswer& answer) { return answer.found(); });
}

Status Inventory::add_nodes(const json::Value& list) {
  const json::Value* items = nullptr;
  if (auto checked = items_of(list, "nodes", items); !checked) {
    return checked;
  }
  for (const auto& item : items->GetArray()) {
    if (!item.IsObject()) {
      continue;
    }
    Node node;
    node.name = text_at(item, {"metadata", "name"});
    node.roles = roles_of(item);
    if (const json::Value* conditions = array_at(item, {"status", "conditions"})) {
      for (const auto& condition : conditions->GetArray()) {
        if (text_at(condition, {"type"}) == "Ready") {
          node.ready = {std::string(text_at(condition, {"status"})), std::string(text_at(condition, {"reason"})),
                        std::string(text_at(condition, {"lastTransitionTime"}))};
        }
      }
    }
    node.architecture = text_at(item, {"status", "nodeInfo", "architecture"});
    node.operating_system = text_at(item, {"status", "nodeInfo", "operatingSystem"});
    node.os_image = text_at(item, {"status", "nodeInfo", "osImage"});
    node.kernel_version = text_at(item, {"status", "nodeInfo", "kernelVersion"});
    node.kubelet_version = text_at(item, {"status", "nodeInfo", "kubeletVersion"});
    std::string_view runtime = text_at(item, {"status", "nodeInfo", "containerRuntimeVersion"});
    if (auto separator = runtime.find("://"); separator != std::string_view::npos) {
      node.container_runtime = runtime.substr(0, separator);
      node.container_runtime_version = runtime.substr(separator + 3);
    } else {
      node.container_runtime = runtime;
    }
    node.capacity = {std::string(text_at(item, {"status", "capacity", "cpu"})),
                     std::string(text_at(item, {"status", "capacity", "memory"}))};
    node.allocatable = {std::string(text_at(item, {"status", "allocatable", "cpu"})),
                        std::string(text_at(item, {"status", "allocatable", "memory"}))};
    nodes_.push_back(std::move(node));
    ++counts_.nodes;
  }
  return ok_status();
}

Status Inventory::add_pods(const json::Value& list) {
  const json::Value* items = nullptr;
  if (auto checked = items_of(list, "pods", items); !checked) {
    return checked;
  }
  for (const auto& item : items->GetArray()) {
    if (item.IsObject()) {
      add_pod(item);
    }
  }
  return ok_status();
}

void Inventory::add_pod(const json::Value& pod) {
  ++counts_.pods;
  Container common;
  common.namespace_name = keep(text_at(pod, {"metadata", "namespace"}));
  common.pod = keep(text_at(pod, {"metadata", "name"}));
  common.node = keep(text_at(pod, {"spec", "nodeName"}));
  common.phase = keep(text_at(pod, {"status", "phase"}));
  struct Kind {
    ContainerType type;
    std::string_view spec_key;
    std::string_view status_key;
  };
  static constexpr Kind kinds[] = {{ContainerType::init, "initContainers", "initContainerStatuses"},
                                   {ContainerType::container, "containers", "containerStatuses"},
                                   {ContainerType::ephemeral, "ephemeralContainers", "ephemeralContainerStatuses"}};
  for (const auto& kind : kinds) {
    const json::Value* specs = array_at(pod, {"spec", kind.spec_key});
    const json::Value* statuses = array_at(pod, {"status", kind.status_key});
    auto status_named = [&](std::string_view name) -> const json::Value* {
      if (statuses != nullptr) {
        for (const auto& status : statuses->GetArray()) {
          if (text_at(status, {"name"}) == name) {
            return &status;
          }
        }
      }
      return nullptr;
    };
    std::set<std::string_view> in_spec;
    auto add = [&](std::string_view name, std::string_view image, const json::Value* status) {
      Container container = common;
      container.type = kind.type;
      container.name = keep(name);
      std::string_view status_image;
      std::string_view container_id;
      if (status != nullptr) {
        status_image = text_at(*status, {"image"});
        container_id = text_at(*status, {"containerID"});
        container.image_id = keep(text_at(*status, {"imageID"}));
        auto state = state_of(*status);
        container.state = keep(state.state);
        container.reason = keep(state.reason);
        container.since = keep(state.since);
        const json::Value* ready = json::find(*status, "ready");
        container.ready = ready != nullptr && ready->IsBool() && ready->GetBool();
      }
      container.image = keep(image.empty() ? status_image : image);
      add_container(container, status_image, container_id);
    };
    if (specs != nullptr) {
      for (const auto& spec : specs->GetArray()) {
        std::string_view name = text_at(spec, {"name"});
        in_spec.insert(name);
        add(name, text_at(spec, {"image"}), status_named(name));
      }
    }
    if (statuses != nullptr) {  // a status whose container the spec does not list (not expected, but reported)
      for (const auto& status : statuses->GetArray()) {
        if (std::string_view name = text_at(status, {"name"}); in_spec.count(name) == 0) {
          add(name, "", &status);
        }
      }
    }
  }
}

bool Inventory::wanted_repository(std::string_view image, std::string_view status_image,
                                  const ImageId& image_id) const {
  if (filter_.repository.empty()) {
    return true;
  }
  return (!image.empty() && normalize_repository(image) == filter_.repository) ||
         (!status_image.empty() && normalize_repository(status_image) == filter_.repository) ||
         (!image_id.repository.empty() && normalize_repository(image_id.repository) == filter_.repository);
}

void Inventory::add_container(Container container, std::string_view status_image, std::string_view container_id) {
  ++counts_.containers;
  ImageId image_id = parse_image_id(container.image_id);
  if (!wanted_repository(container.image, status_image, image_id)) {
    return;
  }
  if (image_id.kind == DigestKind::none) {
    // Not started: with --digest, kept when the pod asks for that digest by name (it is
    // about to run there), but it does not count as found.
    if (!filter_.digests.empty()) {
      auto pinned = pinned_digest(container.image);
      bool asked = std::any_of(answers_.begin(), answers_.end(),
                               [&](const DigestAnswer& answer) { return answer.query.digest == pinned; });
      if (!asked) {
        return;
      }
    }
    not_started_.push_back(container);
    return;
  }
  if (!filter_.digests.empty()) {
    bool matched = false;
    for (auto& answer : answers_) {
      switch (match_digest(answer.query, image_id)) {
        case DigestMatch::repo_digest:
          ++answer.repo_digest_matches;
          matched = true;
          break;
        case DigestMatch::image_id:
          ++answer.image_id_matches;
          matched = true;
          break;
        case DigestMatch::none:
          break;
      }
    }
    if (!matched) {
      return;
    }
  }
  container.runtime = keep(runtime_of(container_id, image_id));
  auto key = std::make_pair(image_id.kind,
                            image_id.kind == DigestKind::unknown ? std::string(container.image_id) : image_id.digest);
  Image& image = images_[key];
  if (image.containers.empty()) {
    image.kind = image_id.kind;
    if (image_id.kind == DigestKind::unknown) {
      image.unknown_image_id = container.image_id;
    } else {
      image.digest = image_id.digest;
    }
  }
  if (!image_id.repository.empty()) {
    image.repositories.emplace(image_id.repository);
  }
  if (!container.image.empty()) {
    image.references.emplace(container.image);
  }
  if (!container.runtime.empty()) {
    image.runtimes.emplace(container.runtime);
  }
  image.containers.push_back(container);
}

void Inventory::finish() {
  std::sort(nodes_.begin(), nodes_.end(), [](const Node& a, const Node& b) { return a.name < b.name; });
  for (auto& [key, image] : images_) {
    std::sort(image.containers.begin(), image.containers.end(), container_before);
  }
  std::sort(not_started_.begin(), not_started_.end(), container_before);
}

}  // namespace kstate::inventory
