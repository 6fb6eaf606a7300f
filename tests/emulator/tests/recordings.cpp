// Loading, replaying and comparing recorded exchanges (see recordings.hpp).
#include "tests/emulator/tests/recordings.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kstate::emulator::test {

namespace recordings_detail {

const char* const kRecordings = KSTATE_SOURCE_DIR "/tests/emulator/recordings/kube-apiserver-1.32";
const char* const kViewerToken = "conformance-viewer-token";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> split_pointer(std::string_view pointer) {
  std::vector<std::string> segments;
  if (pointer.empty()) {
    return segments;
  }
  size_t start = pointer.front() == '/' ? 1 : 0;
  while (true) {
    auto slash = pointer.find('/', start);
    segments.emplace_back(
        pointer.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return segments;
}

bool segments_match(const std::vector<std::string>& path, size_t at, const std::vector<std::string>& pattern,
                    size_t from) {
  if (from == pattern.size()) {
    return at == path.size();
  }
  if (pattern[from] == "**") {
    for (size_t skip = at; skip <= path.size(); ++skip) {
      if (segments_match(path, skip, pattern, from + 1)) {
        return true;
      }
    }
    return false;
  }
  if (at == path.size()) {
    return false;
  }
  return (pattern[from] == "*" || pattern[from] == path[at]) && segments_match(path, at + 1, pattern, from + 1);
}

std::string escape_segment(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

const char* type_name(const json::Value& value) {
  if (value.IsNull()) {
    return "null";
  }
  if (value.IsBool()) {
    return "boolean";
  }
  if (value.IsNumber()) {
    return "number";
  }
  if (value.IsString()) {
    return "string";
  }
  return value.IsArray() ? "array" : "object";
}

std::string shown(const json::Value& value) {
  std::string text = json::dump(value);
  return text.size() > 300 ? text.substr(0, 300) + "...(" + std::to_string(text.size()) + " bytes)" : text;
}

bool any_match(const std::vector<std::string>& patterns, std::string_view pointer) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return pointer_matches(pointer, pattern); });
}

}  // namespace recordings_detail

using namespace recordings_detail;

RecordedExchange load_recording(std::string_view number) {
  std::filesystem::path found;
  for (const auto& entry : std::filesystem::directory_iterator(kRecordings)) {
    auto name = entry.path().filename().string();
    if (name.starts_with(std::string(number) + "-") && name.ends_with(".json")) {
      found = entry.path();
    }
  }
  if (found.empty()) {
    throw std::runtime_error("no recording " + std::string(number) + " in " + kRecordings);
  }
  auto parsed = json::parse(read_text(found));
  if (!parsed) {
    throw std::runtime_error("recording " + found.string() + " is not JSON: " + parsed.error().message);
  }
  const json::Value& doc = *parsed;
  RecordedExchange exchange;
  exchange.file = found.filename().string();
  exchange.title = std::string(json::string_or(json::find(doc, "title"), ""));
  exchange.notes = std::string(json::string_or(json::find(doc, "notes"), ""));
  const json::Value* request = json::find(doc, "request");
  const json::Value* response = json::find(doc, "response");
  if (request == nullptr || response == nullptr) {
    throw std::runtime_error("recording " + exchange.file + " has no request or response");
  }
  exchange.method = std::string(json::string_or(json::find(*request, "method"), ""));
  exchange.path = std::string(json::string_or(json::find(*request, "path"), ""));
  if (const json::Value* headers = json::find(*request, "headers"); headers != nullptr && headers->IsObject()) {
    for (const auto& member : headers->GetObject()) {
      exchange.request_headers[member.name.GetString()] = member.value.GetString();
    }
  }
  if (const json::Value* body = json::find(*request, "body"); body != nullptr) {
    exchange.request_body =
        body->IsString() ? std::string(body->GetString(), body->GetStringLength()) : json::dump(*body);
  }
  const json::Value* status = json::find(*response, "status");
  exchange.status = status != nullptr && status->IsInt() ? status->GetInt() : 0;
  if (const json::Value* headers = json::find(*response, "headers"); headers != nullptr && headers->IsObject()) {
    for (const auto& member : headers->GetObject()) {
      exchange.response_headers[lower(member.name.GetString())] = member.value.GetString();
    }
  }
  if (const json::Value* body = json::find(*response, "body"); body != nullptr) {
    exchange.response_body.CopyFrom(*body, exchange.response_body.GetAllocator());
  }
  return exchange;
}

bool pointer_matches(std::string_view pointer, std::string_view pattern) {
  return segments_match(split_pointer(pointer), 0, split_pointer(pattern), 0);
}

JsonComparison JsonComparison::run_to_run() {
  JsonComparison comparison;
  for (const char* pattern :
       {"**/metadata/uid", "**/metadata/resourceVersion", "**/metadata/creationTimestamp",
        "**/metadata/deletionTimestamp", "**/managedFields/*/time", "**/conditions/*/lastTransitionTime",
        "**/conditions/*/lastUpdateTime", "/details/uid", "/metadata/continue"}) {
    comparison.ignore_value(pattern);
  }
  return comparison;
}

JsonComparison& JsonComparison::ignore_value(std::string pattern) {
  ignored_values_.push_back(std::move(pattern));
  return *this;
}

JsonComparison& JsonComparison::ignore_subtree(std::string pattern) {
  ignored_subtrees_.push_back(std::move(pattern));
  return *this;
}

namespace recordings_detail {

void compare_values(const JsonComparison& rules, const std::vector<std::string>& subtrees, const json::Value& expected,
                    const json::Value& actual, const std::string& pointer, std::vector<Mismatch>& out) {
  if (any_match(subtrees, pointer)) {
    return;
  }
  const bool value_ignored = any_match(rules.ignored_values(), pointer);
  if (std::string_view(type_name(expected)) != type_name(actual)) {
    out.push_back({pointer.empty() ? "/" : pointer, shown(expected), shown(actual)});
    return;
  }
  if (value_ignored) {
    return;
  }
  if (expected.IsObject()) {
    for (const auto& member : expected.GetObject()) {
      std::string child = pointer + "/" + escape_segment(member.name.GetString());
      const json::Value* other = json::find(actual, member.name.GetString());
      if (other == nullptr) {
        if (!any_match(subtrees, child)) {
          out.push_back({child, shown(member.value), "<missing>"});
        }
        continue;
      }
      compare_values(rules, subtrees, member.value, *other, child, out);
    }
    for (const auto& member : actual.GetObject()) {
      std::string child = pointer + "/" + escape_segment(member.name.GetString());
      if (json::find(expected, member.name.GetString()) == nullptr && !any_match(subtrees, child)) {
        out.push_back({child, "<missing>", shown(member.value)});
      }
    }
    return;
  }
  if (expected.IsArray()) {
    const rapidjson::SizeType common = std::min(expected.Size(), actual.Size());
    for (rapidjson::SizeType i = 0; i < common; ++i) {
      compare_values(rules, subtrees, expected[i], actual[i], pointer + "/" + std::to_string(i), out);
    }
    for (rapidjson::SizeType i = common; i < expected.Size(); ++i) {
      std::string child = pointer + "/" + std::to_string(i);
      if (!any_match(subtrees, child)) {
        out.push_back({child, shown(expected[i]), "<missing>"});
      }
    }
    for (rapidjson::SizeType i = common; i < actual.Size(); ++i) {
      std::string child = pointer + "/" + std::to_string(i);
      if (!any_match(subtrees, child)) {
        out.push_back({child, "<missing>", shown(actual[i])});
      }
    }
    return;
  }
  if (expected != actual) {
    out.push_back({pointer.empty() ? "/" : pointer, shown(expected), shown(actual)});
  }
}

}  // namespace recordings_detail

std::vector<Mismatch> JsonComparison::compare(const json::Value& expected, const json::Value& actual) const {
  std::vector<Mismatch> out;
  compare_values(*this, ignored_subtrees_, expected, actual, "", out);
  return out;
}

std::string describe(const std::vector<Mismatch>& mismatches) {
  std::string text;
  for (const auto& mismatch : mismatches) {
    text += mismatch.path + ": expected " + mismatch.expected + ", got " + mismatch.actual + "\n";
  }
  return text;
}

Reply Replayer::send(const RecordedExchange& exchange, const Overrides& overrides) const {
  std::map<std::string, std::string> headers;
  std::optional<std::string> token;
  std::string content_type = "application/json";
  for (const auto& [name, value] : exchange.request_headers) {
    if (lower(name) == "authorization") {
      if (value == "Bearer <viewer>") {
        if (!viewer_registered_) {
          auto registered =
              emulator_.request("POST", "/emulator/tokens",
                                std::string(R"({"token":")") + kViewerToken + R"(","user":"viewer","access":"none"})");
          if (registered.status != 200) {
            throw std::runtime_error("cannot register the viewer token: " + registered.body + registered.error);
          }
          viewer_registered_ = true;
        }
        token = kViewerToken;
      } else if (value != "Bearer <admin>") {
        token = value.substr(value.find(' ') + 1);
      }
    } else if (lower(name) == "content-type") {
      content_type = value;
    } else {
      headers[name] = value;
    }
  }
  for (const auto& [name, value] : overrides.headers) {
    headers[name] = value;
  }
  auto http = emulator_.request(exchange.method, overrides.path.value_or(exchange.path),
                                overrides.body.value_or(exchange.request_body), content_type, token, headers);
  if (http.status == 0) {
    throw std::runtime_error(exchange.file + ": the request failed: " + http.error);
  }
  return Reply{http.status, http.headers, http.body};
}

json::Document reply_json(const Reply& reply) {
  auto content_type = reply.headers.count("content-type") ? reply.headers.at("content-type") : std::string();
  if (reply.headers.count("transfer-encoding") && content_type == "application/json" &&
      reply.body.find("{\"type\":") == 0) {
    json::Document events(rapidjson::kArrayType);
    std::istringstream lines(reply.body);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) {
        continue;
      }
      auto event = json::parse(line);
      json::Value copy;
      if (event) {
        copy.CopyFrom(*event, events.GetAllocator());
      } else {
        copy.SetString(line.c_str(), static_cast<rapidjson::SizeType>(line.size()), events.GetAllocator());
      }
      events.PushBack(std::move(copy), events.GetAllocator());
    }
    return events;
  }
  auto parsed = json::parse(reply.body);
  return parsed ? std::move(*parsed) : json::Document();
}

std::vector<Mismatch> compare_reply(const RecordedExchange& exchange, const Reply& reply,
                                    const JsonComparison& comparison) {
  std::vector<Mismatch> out;
  if (reply.status != exchange.status) {
    out.push_back({"status", std::to_string(exchange.status), std::to_string(reply.status)});
  }
  auto header = [](const std::map<std::string, std::string>& headers, const std::string& name) {
    auto it = headers.find(name);
    return it == headers.end() ? std::string("<none>") : it->second;
  };
  for (const char* name : {"content-type", "cache-control", "warning", "vary", "retry-after"}) {
    auto expected = header(exchange.response_headers, name);
    auto actual = header(reply.headers, name);
    if (expected != actual) {
      out.push_back({std::string("header ") + name, expected, actual});
    }
  }
  if (exchange.response_headers.count("etag") != reply.headers.count("etag")) {
    out.push_back({"header etag", header(exchange.response_headers, "etag"), header(reply.headers, "etag")});
  }
  const bool watch = exchange.path.find("watch=") != std::string::npos;
  if (watch && header(reply.headers, "transfer-encoding") != "chunked") {
    out.push_back({"header transfer-encoding", "chunked", header(reply.headers, "transfer-encoding")});
  }
  if (exchange.response_body.IsString() && !exchange.response_body.IsNull() &&
      header(exchange.response_headers, "content-type").find("json") == std::string::npos) {
    std::string expected(exchange.response_body.GetString(), exchange.response_body.GetStringLength());
    if (expected != reply.body) {
      json::Document actual;
      actual.SetString(reply.body.c_str(), static_cast<rapidjson::SizeType>(reply.body.size()), actual.GetAllocator());
      out.push_back({"body", json::dump(exchange.response_body), json::dump(actual)});
    }
    return out;
  }
  auto actual = reply_json(reply);
  if (actual.IsNull() && !exchange.response_body.IsNull()) {
    out.push_back({"body", "JSON", "not JSON: " + reply.body.substr(0, 300)});
    return out;
  }
  auto body = comparison.compare(exchange.response_body, actual);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::size_t erase_items(json::Value& document, std::string_view pointer, bool (*drop)(const json::Value& item)) {
  json::Value* array = &document;
  for (const auto& segment : split_pointer(pointer)) {
    if (array->IsObject()) {
      array = json::find(*array, segment);
    } else if (array->IsArray()) {
      auto index = static_cast<rapidjson::SizeType>(std::stoul(segment));
      array = index < array->Size() ? &(*array)[index] : nullptr;
    } else {
      array = nullptr;
    }
    if (array == nullptr) {
      return 0;
    }
  }
  if (!array->IsArray()) {
    return 0;
  }
  std::size_t removed = 0;
  for (auto it = array->Begin(); it != array->End();) {
    if (drop(*it)) {
      it = array->Erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

Reply recorder_request(const kstate::testing::Emulator& emulator, const std::string& method, const std::string& path,
                       const std::string& body, const std::string& content_type) {
  auto http = emulator.request(method, path, body, content_type, std::nullopt, {{"User-Agent", "kstate-recorder/1.0"}});
  if (http.status == 0) {
    throw std::runtime_error(method + " " + path + " failed: " + http.error);
  }
  return Reply{http.status, http.headers, http.body};
}

json::Document replay_and_check(const Replayer& replayer, const RecordedExchange& exchange,
                                const JsonComparison& comparison, const Replayer::Overrides& overrides) {
  auto reply = replayer.send(exchange, overrides);
  check_reply(exchange, reply, comparison);
  return reply_json(reply);
}

json::Document replay_and_check(const Replayer& replayer, std::string_view number, const JsonComparison& comparison) {
  return replay_and_check(replayer, load_recording(number), comparison);
}

void check_reply(const RecordedExchange& exchange, const Reply& reply, const JsonComparison& comparison) {
  CHECK(mismatch_report(exchange, compare_reply(exchange, reply, comparison)) == "");
}

std::string text_at(const json::Value& object, std::initializer_list<std::string_view> path) {
  return std::string(json::string_or(json::find_path(object, path), ""));
}

const char* const kRecordedJob = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.36
        command: [echo, hello]
)";

kstate::testing::EmulatorOptions conformance_emulator() {
  kstate::testing::EmulatorOptions options;
  options.version = "1.32";
  options.crd_establish_delay_seconds = 0.02;
  // Long enough to look at the states in between (a CRD being cleaned up, a namespace
  // before the controller's first pass), short enough for a test of seconds.
  options.extra_args = {
      "--crd-deletion-delay",         "0.3", "--crd-create-hold",         "0.3", "--namespace-deletion-delay", "0.6",
      "--namespace-recheck-interval", "0.2", "--watch-bookmark-interval", "60"};
  return options;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::string mismatch_report(const RecordedExchange& exchange, const std::vector<Mismatch>& mismatches) {
  if (mismatches.empty()) {
    return "";
  }
  return exchange.file + " (" + exchange.title + "):\n" + describe(mismatches);
}

}  // namespace kstate::emulator::test
