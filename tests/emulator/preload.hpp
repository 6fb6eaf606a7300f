// Objects put into the emulator's store at start-up (`--preload FILE`), as the state of
// a running cluster rather than as requests: Nodes and Pods keep the `status` the file
// gives them (the kubelet's container statuses, for instance), which a create through
// the API would drop (status is a subresource) and which no controller here would
// write. Each object is stored as given plus what the server would have set: uid and
// creationTimestamp when missing, a new resourceVersion; a Namespace that a namespaced
// object names and that does not exist is created through the API first. Files are
// YAML (documents separated by `---`) or JSON; a document may also be a `List` or a
// JSON array of objects. Loading stops at the first object it cannot place (unknown
// kind, no name) with an error naming the file and the object's position.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "tests/emulator/api_server.hpp"

namespace kstate::emulator {

// Returns how many objects were stored.
Result<std::size_t> preload_objects(ApiServer& api, std::string_view text, const std::string& source);

}  // namespace kstate::emulator
