// The emulator's test controls, reachable by admins under /emulator/: fault
// injection (latency, 429/5xx answers for the next N requests or a fraction of
// them, connections closed mid-response, hangs, Warning headers) and the request log with
// counters by verb, path and code. Pure state machines; the HTTP layer acts on
// their decisions. Randomness is injected for reproducible tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::emulator {

struct FaultSettings {
  int latency_ms = 0;
  int fail_next = 0;         // the next N matching requests get fail_code
  double fail_fraction = 0;  // or this fraction of them
  int fail_code = 429;       // 429, 500, 503, ...; 404 is the text/plain "404 page not found" of a path not served
  int retry_after_seconds = 1;
  int close_next = 0;         // the next N matching responses are cut off mid-body
  int drop_after_bytes = -1;  // where close_next cuts a response: after this many bytes (-1: half of it)
  int hang_next = 0;          // the next N matching requests never get an answer
  // The next N matching answers carry this Warning text (`Warning: 299 - "<text>"`, as
  // kube-apiserver sends its own, recordings 27 and 73), as an admission webhook or a
  // deprecated API would make them: what clients must show, escaped and bounded.
  int warn_next = 0;
  std::string warning;
  std::string path_prefix;  // only requests whose path starts with this ("" = all)
  std::string path;         // only requests to exactly this path ("" = all)
  std::string method;       // only this method ("" = all)
};

enum class FaultAction { none, fail, close, hang };

struct FaultDecision {
  FaultAction action = FaultAction::none;
  int code = 0;
  int retry_after_seconds = 0;
  std::chrono::milliseconds latency{0};
  std::string warning;  // non-empty: add it to the answer as a Warning header
};

class FaultPlan {
 public:
  explicit FaultPlan(std::uint64_t seed = 1) : random_(seed) {}
  void set(FaultSettings settings) { settings_ = std::move(settings); }
  const FaultSettings& settings() const { return settings_; }
  FaultDecision decide(std::string_view method, std::string_view path);

  // JSON form used by /emulator/faults (camelCase keys, e.g. {"failNext":2,"failCode":503}).
  static Result<FaultSettings> from_json(const json::Value& body);
  static std::string to_json(const FaultSettings& settings);

 private:
  FaultSettings settings_;
  std::mt19937_64 random_;
};

// A status body for an injected failure (429 TooManyRequests, 500 InternalError, 503 ServiceUnavailable).
std::string injected_failure_body(int code, int retry_after_seconds);

struct LoggedRequest {
  std::uint64_t sequence = 0;
  std::string method;
  std::string path;
  std::string query;
  std::string verb;
  int code = 0;
  std::string user;
  std::string fault;       // "", "fail", "close", "hang"
  std::int64_t at_ms = 0;  // when it arrived: milliseconds since the emulator started (steady clock)
  // How long the API handled it (store, admission, persistence; not the network): what
  // benchmarks subtract as "the server's time".
  std::int64_t handled_us = 0;
};

class RequestLog {
 public:
  explicit RequestLog(std::size_t limit = 100000) : limit_(limit) {}
  void record(LoggedRequest entry);
  void reset();
  // {"total":N,"requests":[...],"counters":{"verb":{...},"path":{...},"code":{...}}}
  std::string to_json() const;
  std::uint64_t total() const { return total_; }

 private:
  std::size_t limit_;
  std::deque<LoggedRequest> entries_;
  std::map<std::string, std::uint64_t> by_verb_;
  std::map<std::string, std::uint64_t> by_path_;
  std::map<std::string, std::uint64_t> by_code_;
  std::uint64_t total_ = 0;
};

}  // namespace kstate::emulator
