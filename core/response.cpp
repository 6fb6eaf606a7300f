// Status decoding for non-2xx API server responses.
#include "core/response.hpp"

#include <charconv>

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
  error.kind = error_kind_of(http_status, error.reason);
  return error;
}

}  // namespace kstate
