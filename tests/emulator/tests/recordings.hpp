// The conformance tests' tools: loading a recorded exchange with a real
// kube-apiserver (tests/emulator/recordings/kube-apiserver-1.32/NN-*.json),
// replaying its request against a running emulator over HTTPS, and comparing
// what a client can see of both answers (status, the headers clients read, and
// the body as JSON) while ignoring only what differs from run to run. A
// mismatch names the path and both values, so a failing conformance test says
// exactly what the emulator answers differently.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"

namespace kstate::emulator::test {

struct RecordedExchange {
  std::string file;  // "16-list-configmaps.json"
  std::string title;
  std::string method;
  std::string path;  // with the query
  std::map<std::string, std::string> request_headers;
  std::string request_body;  // as sent: JSON bodies serialised, YAML bodies verbatim
  int status = 0;
  std::map<std::string, std::string> response_headers;  // lower-case names
  json::Document response_body;                         // a JSON value; text bodies are strings
  std::string notes;
};

// Loads the recording whose file name starts with `number` ("16" -> 16-list-configmaps.json).
// Throws std::runtime_error when it is missing.
RecordedExchange load_recording(std::string_view number);

struct Mismatch {
  std::string path;  // JSON pointer ("/items/2/data/ca.crt"); "status", "header content-type" for the envelope
  std::string expected;
  std::string actual;
};

// Which parts of two JSON documents may differ. Patterns are JSON pointers whose
// segments may be "*" (any one key or index) or "**" (any number of segments,
// also none); a key containing "/" is written with "~1", as in JSON pointers.
class JsonComparison {
 public:
  // What differs from run to run in every exchange: uids, resourceVersions,
  // timestamps, continue tokens (they embed the resourceVersion).
  static JsonComparison run_to_run();

  // The value may differ, but it must be there with the same JSON type.
  JsonComparison& ignore_value(std::string pattern);
  // The subtree may differ or be missing on either side.
  JsonComparison& ignore_subtree(std::string pattern);

  std::vector<Mismatch> compare(const json::Value& expected, const json::Value& actual) const;
  const std::vector<std::string>& ignored_values() const { return ignored_values_; }

 private:
  std::vector<std::string> ignored_values_;
  std::vector<std::string> ignored_subtrees_;
};

// Whether a JSON pointer matches a pattern (see JsonComparison).
bool pointer_matches(std::string_view pointer, std::string_view pattern);

// One line per mismatch ("<path>: expected <x>, got <y>"); empty when there is none.
std::string describe(const std::vector<Mismatch>& mismatches);

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// The recorded identities mapped onto the emulator's: "Bearer <admin>" is the admin
// token, "Bearer <viewer>" a token of user `viewer` without any grant (registered
// through /emulator/tokens on first use), any other bearer token is sent as it is.
class Replayer {
 public:
  explicit Replayer(const kstate::testing::Emulator& emulator) : emulator_(emulator) {}

  struct Overrides {
    std::optional<std::string> path;  // e.g. another resourceVersion to watch from
    std::map<std::string, std::string> headers;
    std::optional<std::string> body;
  };
  Reply send(const RecordedExchange& exchange, const Overrides& overrides) const;
  Reply send(const RecordedExchange& exchange) const { return send(exchange, Overrides{}); }

 private:
  const kstate::testing::Emulator& emulator_;
  mutable bool viewer_registered_ = false;
};

// Compares what a client sees: the status code; Content-Type, Cache-Control, Warning,
// Vary, Retry-After (exact) and ETag (present when recorded, absent otherwise); chunked
// framing for watches; and the body (JSON through `comparison`, text exactly). A watch
// body is compared as its list of events.
std::vector<Mismatch> compare_reply(const RecordedExchange& exchange, const Reply& reply,
                                    const JsonComparison& comparison);

// The reply's body as JSON (a watch stream as an array of its events); null when it is not JSON.
json::Document reply_json(const Reply& reply);

// Removes the items of the array at `pointer` for which `drop` is true (the recorded
// cluster's other tenants: a CRD group, namespaces...). Returns how many it removed.
std::size_t erase_items(json::Value& document, std::string_view pointer, bool (*drop)(const json::Value& item));

// A request the recordings' client made between recorded exchanges (their setup), with
// its User-Agent (which names the field manager of writes without fieldManager).
Reply recorder_request(const kstate::testing::Emulator& emulator, const std::string& method, const std::string& path,
                       const std::string& body = "", const std::string& content_type = "application/json");

// The emulator the conformance tests replay against: the recorded version (1.32) and
// controllers fast enough for tests that take seconds.
kstate::testing::EmulatorOptions conformance_emulator();

// Replays a recording (after the caller's setup) and CHECKs that the answer matches
// it; returns the answer's body as JSON for further checks.
json::Document replay_and_check(const Replayer& replayer, const RecordedExchange& exchange,
                                const JsonComparison& comparison = JsonComparison::run_to_run(),
                                const Replayer::Overrides& overrides = {});
json::Document replay_and_check(const Replayer& replayer, std::string_view number,
                                const JsonComparison& comparison = JsonComparison::run_to_run());
// CHECKs that an answer already received matches the recording.
void check_reply(const RecordedExchange& exchange, const Reply& reply,
                 const JsonComparison& comparison = JsonComparison::run_to_run());

// A string in a JSON document ("" when absent).
std::string text_at(const json::Value& object, std::initializer_list<std::string_view> path);

// The Job recordings 39 and 73 imply: created by kstate's server-side apply, command [echo, hello].
extern const char* const kRecordedJob;

// Polls `condition` (every 20 ms) until it holds or `limit` passes: for the states
// controllers reach some time after a request, over the real server's clock.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = std::chrono::seconds(10));

// "File: title" plus the mismatches, for a test's failure message; empty when they match.
std::string mismatch_report(const RecordedExchange& exchange, const std::vector<Mismatch>& mismatches);

}  // namespace kstate::emulator::test
