// KEP-3659 ApplySet identity, member labels and the parent Secret (see applyset.hpp).
#include "states/applyset.hpp"

#include <algorithm>

#include "core/encoding.hpp"
#include "core/strings.hpp"
#include "states/writer.hpp"

namespace kstate::states {

namespace {

// RFC 4648 section 5 (URL- and filename-safe alphabet), without padding: what Go's
// base64.RawURLEncoding produces and kubectl uses.
std::string base64url_unpadded(std::string_view bytes) {
  std::string text = encoding::base64_encode(bytes);
  std::replace(text.begin(), text.end(), '+', '-');
  std::replace(text.begin(), text.end(), '/', '_');
  text.erase(std::find(text.begin(), text.end(), '='), text.end());
  return text;
}

}  // namespace

std::string applyset_id(std::string_view name, std::string_view ns, std::string_view kind, std::string_view group) {
  std::string identity;
  identity.append(name).append(".").append(ns).append(".").append(kind).append(".").append(group);
  return "applyset-" + base64url_unpadded(encoding::sha256(identity)) + "-v1";
}

void add_member_labels(json::Value& object, std::string_view id, json::Allocator& allocator) {
  json::Value& metadata = json::ensure_object(object, "metadata", allocator);
  json::Value& labels = json::ensure_object(metadata, "labels", allocator);
  json::set_string(labels, applyset_part_of_label, id, allocator);
  json::set_string(labels, managed_by_label, managed_by_value, allocator);
}

bool has_member_labels(const json::Value& object, std::string_view id) {
  const json::Value* labels = json::find_path(object, {"metadata", "labels"});
  if (labels == nullptr)
    return false;
  return json::get_string(*labels, applyset_part_of_label) == id &&
         json::get_string(*labels, managed_by_label) == managed_by_value;
}

std::string contains_group_kinds(const Inventory& inventory) {
  std::set<std::string> group_kinds;
  for (const InventoryEntry& entry : inventory.entries)
    group_kinds.insert(entry.group.empty() ? entry.kind : entry.kind + "." + entry.group);
  return strings::join(group_kinds, ",");
}

json::Document make_parent_secret(const ApplySetParent& parent, std::string_view kstate_version,
                                  const Inventory& inventory) {
  return make_parent_secret(parent, kstate_version, inventory, encode_inventory(inventory));
}

json::Document make_parent_secret(const ApplySetParent& parent, std::string_view kstate_version,
                                  const Inventory& inventory, std::string_view encoded_inventory,
                                  std::string_view writer) {
  json::Document secret(rapidjson::kObjectType);
  auto& allocator = secret.GetAllocator();
  json::set_string(secret, "apiVersion", "v1", allocator);
  json::set_string(secret, "kind", "Secret", allocator);
  json::Value& metadata = json::ensure_object(secret, "metadata", allocator);
  json::set_string(metadata, "name", parent.name, allocator);
  json::set_string(metadata, "namespace", parent.ns, allocator);
  json::Value& labels = json::ensure_object(metadata, "labels", allocator);
  json::set_string(labels, applyset_id_label, applyset_id(parent), allocator);
  json::set_string(labels, managed_by_label, managed_by_value, allocator);
  json::Value& annotations = json::ensure_object(metadata, "annotations", allocator);
  json::set_string(annotations, applyset_tooling_annotation, "kstate/" + std::string(kstate_version), allocator);
  json::set_string(annotations, applyset_group_kinds_annotation, contains_group_kinds(inventory), allocator);
  std::set<std::string> other_namespaces;
  for (const InventoryEntry& entry : inventory.entries) {
    if (!entry.ns.empty() && entry.ns != parent.ns)
      other_namespaces.insert(entry.ns);
  }
  json::set_string(annotations, applyset_namespaces_annotation, strings::join(other_namespaces, ","), allocator);
  if (!writer.empty()) {
    json::set_string(annotations, writer_annotation, writer, allocator);
  }
  json::set_string(secret, "type", "Opaque", allocator);
  json::Value& data = json::ensure_object(secret, "data", allocator);
  json::set_string(data, inventory_data_key, encoding::base64_encode(encoded_inventory), allocator);
  return secret;
}

}  // namespace kstate::states
