// The recorded exchanges with a real kube-apiserver
// (tests/emulator/recordings/kube-apiserver-1.32/NN-*.json, the ground truth the
// emulator must match) as values the unit tests of kstate's own code can use: a pure
// function's table test takes a recorded answer's body or headers as its input,
// exactly as the real server sent them. (The emulator's conformance tests have their
// own loader, tests/emulator/tests/recordings.hpp, which also replays and compares.)
//
//   auto unknown_field = kstate::testing::recording(26);
//   auto error = error_from_response(unknown_field.status, unknown_field.body);
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kstate::testing {

struct Recording {
  std::string title;
  std::string method;
  std::string path;          // with its query
  std::string request_body;  // as sent (YAML text, or JSON re-serialised)
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // response headers, names lower-cased
  std::string body;  // the response body as received (a JSON body re-serialised)
};

// Recording number `number` (1-78). Throws std::runtime_error when it cannot be read.
Recording recording(int number);

}  // namespace kstate::testing
