// The real kube-apiserver 1.32 exchanges (tests/emulator/recordings/kube-apiserver-1.32/,
// the repository's copy of ../shared/testdata's, the ground truth the emulator follows),
// for unit tests built on what a real server sent: a recording's request or response
// body, parsed, by its file name. (The emulator's conformance tests replay them with
// tests/emulator/tests/recordings.hpp.)
//
//   json::Document list = recorded_response_body("16-list-configmaps.json");
#pragma once

#include <string>

#include "core/json.hpp"
#include "core/response.hpp"

namespace kstate::testing {

// ../shared/testdata beside the source tree, or $KSTATE_SHARED_TESTDATA when set (a
// worktree elsewhere than beside shared/).
std::string shared_testdata();

// The whole recording (title, request, response, notes). Throws when it is missing.
json::Document recording(const std::string& file);
// response.body as the server sent it (serialised back to JSON text), and parsed.
std::string recorded_response_text(const std::string& file);
json::Document recorded_response_body(const std::string& file);
// request.body as the client sent it (YAML or JSON text).
std::string recorded_request_text(const std::string& file);
// The recorded answer as the transport hands it on (status, headers with lower-cased
// names, body text), for the decoding of answers: errors, Warning headers.
Response recorded_response(const std::string& file);

}  // namespace kstate::testing
