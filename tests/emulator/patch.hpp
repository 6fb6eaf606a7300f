// The PATCH formats kube-apiserver accepts, as pure functions over JSON values:
// JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch
// (merge keys for the common lists, `$patch`, `$retainKeys`,
// `$deleteFromPrimitiveList`, `$setElementOrder`). The list merge keys live here
// too because server-side apply identifies list items with the same keys.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::emulator {

// The keys that identify items of the list stored under `field_name` (e.g.
// containers -> {"name"}), chosen as Kubernetes' Go types declare them. Empty
// when the list is atomic (replaced as a whole). `sample_item` disambiguates
// lists that share a name (container ports vs Service ports).
std::vector<std::string> list_merge_keys(std::string_view field_name, const json::Value& sample_item);
// The keys server-side apply and managedFields identify list items with (the Go
// types' +listMapKey): as list_merge_keys, except that ports are keyed by port and
// protocol together. A key field left out of an item counts with its default
// (protocol: "TCP"), see list_key_default.
std::vector<std::string> list_map_keys(std::string_view field_name, const json::Value& sample_item);
// The default of a list map key field an item may leave out ("TCP" for protocol), or "".
std::string_view list_key_default(std::string_view key);
// Whether the list stored under `field_name` is keyed (a map of items) even when it is empty.
bool is_keyed_list_field(std::string_view field_name);
// Lists of scalars merged as sets (metadata.finalizers).
bool is_set_list(std::string_view field_name);

// Applies an RFC 7386 merge patch to target in place.
void apply_merge_patch(json::Value& target, const json::Value& patch, json::Allocator& allocator);
// Applies an RFC 6902 patch (an array of operations); errors say which op failed.
Status apply_json_patch(json::Value& target, const json::Value& operations, json::Allocator& allocator);
// Applies a strategic merge patch in place.
Status apply_strategic_merge_patch(json::Value& target, const json::Value& patch, json::Allocator& allocator);

}  // namespace kstate::emulator
