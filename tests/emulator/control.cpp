// Fault decisions and the request log (see control.hpp).
#include "tests/emulator/control.hpp"

namespace kstate::emulator {

FaultDecision FaultPlan::decide(std::string_view method, std::string_view path) {
  FaultDecision decision;
  if (!settings_.path_prefix.empty() && !path.starts_with(settings_.path_prefix)) {
    return decision;
  }
  if (!settings_.path.empty() && path != settings_.path) {
    return decision;
  }
  if (!settings_.method.empty() && method != settings_.method) {
    return decision;
  }
  decision.latency = std::chrono::milliseconds(settings_.latency_ms);
  if (settings_.hang_next > 0) {
    --settings_.hang_next;
    decision.action = FaultAction::hang;
    return decision;
  }
  if (settings_.fail_next > 0) {
    --settings_.fail_next;
    decision.action = FaultAction::fail;
  } else if (settings_.fail_fraction > 0) {
    std::uniform_real_distribution<double> roll(0.0, 1.0);
    if (roll(random_) < settings_.fail_fraction) {
      decision.action = FaultAction::fail;
    }
  }
  if (decision.action == FaultAction::fail) {
    decision.code = settings_.fail_code;
    decision.retry_after_seconds = settings_.retry_after_seconds;
    return decision;
  }
  if (settings_.close_next > 0) {
    --settings_.close_next;
    decision.action = FaultAction::close;
  }
  if (settings_.warn_next > 0) {
    --settings_.warn_next;
    decision.warning = settings_.warning;
  }
  return decision;
}

Result<FaultSettings> FaultPlan::from_json(const json::Value& body) {
  if (!body.IsObject()) {
    return Error(ErrorKind::invalid, "fault settings must be a JSON object");
  }
  FaultSettings settings;
  for (const auto& member : body.GetObject()) {
    std::string_view key(member.name.GetString(), member.name.GetStringLength());
    const auto& value = member.value;
    auto need_int = [&](int& out) -> bool {
      if (!value.IsInt()) {
        return false;
      }
      out = value.GetInt();
      return true;
    };
    bool ok = true;
    if (key == "latencyMs") {
      ok = need_int(settings.latency_ms);
    } else if (key == "failNext") {
      ok = need_int(settings.fail_next);
    } else if (key == "failFraction") {
      ok = value.IsNumber();
      settings.fail_fraction = ok ? value.GetDouble() : 0;
    } else if (key == "failCode") {
      ok = need_int(settings.fail_code);
    } else if (key == "retryAfterSeconds") {
      ok = need_int(settings.retry_after_seconds);
    } else if (key == "closeNext") {
      ok = need_int(settings.close_next);
    } else if (key == "dropAfterBytes") {
      ok = need_int(settings.drop_after_bytes);
    } else if (key == "hangNext") {
      ok = need_int(settings.hang_next);
    } else if (key == "warnNext") {
      ok = need_int(settings.warn_next);
    } else if (key == "warning") {
      ok = value.IsString();
      settings.warning = ok ? std::string(value.GetString(), value.GetStringLength()) : "";
    } else if (key == "pathPrefix") {
      ok = value.IsString();
      settings.path_prefix = ok ? value.GetString() : "";
    } else if (key == "path") {
      ok = value.IsString();
      settings.path = ok ? value.GetString() : "";
    } else if (key == "method") {
      ok = value.IsString();
      settings.method = ok ? value.GetString() : "";
    } else {
      return Error(ErrorKind::invalid, "unknown fault setting \"" + std::string(key) + "\"");
    }
    if (!ok) {
      return Error(ErrorKind::invalid, "fault setting \"" + std::string(key) + "\" has the wrong type");
    }
  }
  return settings;
}

std::string FaultPlan::to_json(const FaultSettings& settings) {
  json::Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  json::set(doc, "latencyMs", json::Value(settings.latency_ms), allocator);
  json::set(doc, "failNext", json::Value(settings.fail_next), allocator);
  json::set(doc, "failFraction", json::Value(settings.fail_fraction), allocator);
  json::set(doc, "failCode", json::Value(settings.fail_code), allocator);
  json::set(doc, "retryAfterSeconds", json::Value(settings.retry_after_seconds), allocator);
  json::set(doc, "closeNext", json::Value(settings.close_next), allocator);
  json::set(doc, "hangNext", json::Value(settings.hang_next), allocator);
  json::set(doc, "dropAfterBytes", json::Value(settings.drop_after_bytes), allocator);
  json::set(doc, "warnNext", json::Value(settings.warn_next), allocator);
  json::set_string(doc, "warning", settings.warning, allocator);
  json::set_string(doc, "pathPrefix", settings.path_prefix, allocator);
  json::set_string(doc, "path", settings.path, allocator);
  json::set_string(doc, "method", settings.method, allocator);
  return json::dump(doc);
}

std::string injected_failure_body(int code, int retry_after_seconds) {
  std::string reason = "InternalError";
  std::string message = "Internal error occurred: injected by kstate-emulator";
  if (code == 429) {
    reason = "TooManyRequests";
    message = "Too many requests, please try again later.";
  } else if (code == 503) {
    reason = "ServiceUnavailable";
    message = "the server is currently unable to handle the request";
  } else if (code == 504) {
    reason = "Timeout";
    message = "the server was unable to return a response in the time allotted";
  }
  std::string details =
      code == 429 ? ",\"details\":{\"retryAfterSeconds\":" + std::to_string(retry_after_seconds) + "}" : std::string();
  return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"" + message +
         "\",\"reason\":\"" + reason + "\"" + details + ",\"code\":" + std::to_string(code) + "}";
}

void RequestLog::record(LoggedRequest entry) {
  entry.sequence = ++total_;
  ++by_verb_[entry.verb];
  ++by_path_[entry.method + " " + entry.path];
  ++by_code_[std::to_string(entry.code)];
  entries_.push_back(std::move(entry));
  while (entries_.size() > limit_) {
    entries_.pop_front();
  }
}

void RequestLog::reset() {
  entries_.clear();
  by_verb_.clear();
  by_path_.clear();
  by_code_.clear();
  total_ = 0;
}

std::string RequestLog::to_json() const {
  json::Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  json::set(doc, "total", json::Value(static_cast<uint64_t>(total_)), allocator);
  json::Value requests(rapidjson::kArrayType);
  for (const auto& entry : entries_) {
    json::Value item(rapidjson::kObjectType);
    json::set(item, "sequence", json::Value(static_cast<uint64_t>(entry.sequence)), allocator);
    json::set_string(item, "method", entry.method, allocator);
    json::set_string(item, "path", entry.path, allocator);
    json::set_string(item, "query", entry.query, allocator);
    json::set_string(item, "verb", entry.verb, allocator);
    json::set(item, "code", json::Value(entry.code), allocator);
    json::set_string(item, "user", entry.user, allocator);
    json::set(item, "atMs", json::Value(static_cast<std::int64_t>(entry.at_ms)), allocator);
    json::set(item, "handledUs", json::Value(static_cast<std::int64_t>(entry.handled_us)), allocator);
    if (!entry.fault.empty()) {
      json::set_string(item, "fault", entry.fault, allocator);
    }
    requests.PushBack(std::move(item), allocator);
  }
  json::set(doc, "requests", std::move(requests), allocator);
  json::Value counters(rapidjson::kObjectType);
  for (auto [name, map] : {std::pair{"verb", &by_verb_}, std::pair{"path", &by_path_}, std::pair{"code", &by_code_}}) {
    json::Value counts(rapidjson::kObjectType);
    for (const auto& [key, count] : *map) {
      json::set(counts, key, json::Value(static_cast<uint64_t>(count)), allocator);
    }
    json::set(counters, name, std::move(counts), allocator);
  }
  json::set(doc, "counters", std::move(counters), allocator);
  return json::dump(doc);
}

}  // namespace kstate::emulator
