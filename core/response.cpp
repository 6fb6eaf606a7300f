// Status decoding for non-2xx API server responses.
#include "core/response.hpp"

#include <charconv>
#include <optional>

#include "core/json.hpp"
#include "core/untrusted_text.hpp"

namespace kstate {
namespace {

// A Status reason is a word (NotFound, AlreadyExists); a cause one field's complaint.
constexpr std::size_t max_reason_bytes = 256;
constexpr std::size_t max_cause_bytes = 1024;
constexpr std::size_t max_causes = 20;

}  // namespace

std::string_view Response::header(std::string_view lower_case_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_case_name) {
      return value;
    }
  }
  return {};
}

ErrorKind error_kind_of(int http_status, std::string_view reason) {
  switch (http_status) {
    case 400:
    case 422:
      return ErrorKind::invalid;
    case 401:
      return ErrorKind::unauthorized;
    case 403:
      return ErrorKind::forbidden;
    case 404:
      return ErrorKind::not_found;
    case 409:
      return reason == "AlreadyExists" ? ErrorKind::already_exists : ErrorKind::conflict;
    case 410:
      return ErrorKind::gone;
    case 429:
      return ErrorKind::too_many_requests;
    case 504:
      return ErrorKind::timeout;
    default:
      break;
  }
  if (http_status >= 500) {
    return ErrorKind::server_error;
  }
  if (http_status == 405 || http_status == 406 || http_status == 415) {
    return ErrorKind::unsupported;
  }
  return ErrorKind::invalid;
}

std::vector<std::string> Response::warnings() const {
  std::vector<std::string> texts;
  for (const auto& [name, value] : headers) {
    if (name == "warning") {
      for (auto& text : parse_warning_header(value)) {
        texts.push_back(std::move(text));
      }
    }
  }
  return texts;
}

std::vector<std::string> parse_warning_header(std::string_view value) {
  std::vector<std::string> texts;
  // A quoted-string at `at` (which is past the opening quote on return): its text,
  // unescaped, or nullopt when it is not terminated.
  auto quoted = [&](std::size_t& at) -> std::optional<std::string> {
    if (at >= value.size() || value[at] != '"') {
      return std::nullopt;
    }
    std::string text;
    for (++at; at < value.size(); ++at) {
      if (value[at] == '\\' && at + 1 < value.size()) {
        text += value[++at];
      } else if (value[at] == '"') {
        ++at;
        return text;
      } else {
        text += value[at];
      }
    }
    return std::nullopt;
  };
  std::size_t at = 0;
  while (at < value.size()) {
    while (at < value.size() && (value[at] == ' ' || value[at] == ',')) {
      ++at;
    }
    if (at + 4 > value.size() || value[at + 3] != ' ') {
      break;
    }
    const std::string_view code = value.substr(at, 3);
    at += 4;
    const std::size_t agent_end = value.find(' ', at);
    if (agent_end == std::string_view::npos) {
      break;
    }
    at = agent_end + 1;
    auto text = quoted(at);
    if (!text) {
      break;
    }
    if (at < value.size() && value[at] == ' ' && at + 1 < value.size() && value[at + 1] == '"') {
      ++at;
      if (!quoted(at)) {  // the optional warn-date
        break;
      }
    }
    if (code == "299") {
      texts.push_back(std::move(*text));
    }
  }
  return texts;
}

namespace {

// Server-side apply checks the patch against the kind's schema before anything else,
// and reports a mismatch (an undeclared field, a value of the wrong type) as an
// internal error: HTTP 500, a Status without reason, whatever fieldValidation says
// (recordings 26 and 66; kubernetes/kubernetes#122480). Its message is the only place
// that says so: "failed to create typed patch object (/name; group/version,
// Kind=K): .path: text", or "...: errors:\n  .path: text\n  .path: text" for several.
// Returns the causes (paths without their leading dot), empty when the message is not
// of that form.
constexpr std::string_view typed_patch_failure = "failed to create typed patch object";

std::vector<StatusCause> typed_patch_causes(std::string_view message) {
  std::vector<StatusCause> causes;
  if (!message.starts_with(typed_patch_failure)) {
    return causes;
  }
  const std::size_t identity_end = message.find("): ");
  if (identity_end == std::string_view::npos) {
    return causes;
  }
  std::string_view rest = message.substr(identity_end + 3);
  if (rest.starts_with("errors:")) {
    rest.remove_prefix(7);
  }
  while (!rest.empty()) {
    std::size_t line_end = rest.find('\n');
    std::string_view line = rest.substr(0, line_end);
    rest = line_end == std::string_view::npos ? std::string_view() : rest.substr(line_end + 1);
    while (!line.empty() && line.front() == ' ') {
      line.remove_prefix(1);
    }
    const std::size_t separator = line.find(": ");
    if (line.empty() || separator == std::string_view::npos) {
      continue;
    }
    std::string_view path = line.substr(0, separator);
    if (path.starts_with('.')) {
      path.remove_prefix(1);
    }
    if (causes.size() == max_causes) {
      causes.push_back({"", "... and more fields", ""});
      break;
    }
    causes.push_back({"FieldValueInvalid", printable(line.substr(separator + 2), max_cause_bytes),
                      printable(path, max_cause_bytes)});
  }
  return causes;
}

}  // namespace

Error error_from_response(int http_status, std::string_view body, std::string_view retry_after) {
  Error error;
  error.http_status = http_status;
  auto document = json::parse(body);
  bool is_status = document.ok() && document->IsObject() && json::get_string(*document, "kind") == "Status";
  if (is_status) {
    const auto& status = *document;
    // Whatever the server (or an admission webhook behind it) wrote is untrusted text
    // that ends up in logs and reports: escaped and capped (untrusted_text.hpp).
    error.reason = printable(json::string_or(json::find(status, "reason"), ""), max_reason_bytes);
    error.message = printable(json::string_or(json::find(status, "message"), ""));
    if (const auto* details = json::find(status, "details"); details != nullptr && details->IsObject()) {
      if (const auto* causes = json::find(*details, "causes"); causes != nullptr && causes->IsArray()) {
        for (const auto& cause : causes->GetArray()) {
          if (error.causes.size() == max_causes) {
            error.causes.push_back({"", "... and " + std::to_string(causes->Size() - max_causes) + " more causes", ""});
            break;
          }
          error.causes.push_back({printable(json::string_or(json::find(cause, "reason"), ""), max_reason_bytes),
                                  printable(json::string_or(json::find(cause, "message"), ""), max_cause_bytes),
                                  printable(json::string_or(json::find(cause, "field"), ""), max_cause_bytes)});
        }
      }
      if (const auto* seconds = json::find(*details, "retryAfterSeconds"); seconds != nullptr && seconds->IsInt()) {
        error.retry_after_seconds = seconds->GetInt();
      }
    }
  }
  error.kind = error_kind_of(http_status, error.reason);
  if (http_status == 404) {
    // No Status, or a NotFound Status that names no object: see resource_not_served.
    const bool names_something = is_status && (json::find_path(*document, {"details", "name"}) != nullptr ||
                                               json::find_path(*document, {"details", "kind"}) != nullptr);
    error.resource_not_served = !names_something;
    if (!is_status) {
      error.message = "the server does not serve this resource (HTTP 404: 404 page not found)";
    }
  }
  if (http_status >= 500 && error.reason.empty() && is_status) {
    // (from the message as sent: its line breaks separate the fields)
    if (auto causes = typed_patch_causes(json::string_or(json::find(*document, "message"), "")); !causes.empty()) {
      error.kind = ErrorKind::invalid;  // the request's fault: never retried as a server failure
      error.causes = std::move(causes);
      error.message = "the object does not match the server's schema for its kind";
    }
  }
  if (error.message.empty()) {
    std::string excerpt = printable(body, 200);
    error.message = "the server responded with HTTP " + std::to_string(http_status) +
                    (excerpt.empty() ? std::string() : ": " + excerpt);
  }
  if (!retry_after.empty()) {
    int seconds = 0;
    auto [end, ec] = std::from_chars(retry_after.data(), retry_after.data() + retry_after.size(), seconds);
    if (ec == std::errc() && seconds >= 0) {
      error.retry_after_seconds = seconds;
    }
  }
  return error;
}

}  // namespace kstate
