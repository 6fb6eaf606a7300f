// Incremental decoding of newline-delimited watch events.
#include "core/watch.hpp"

#include "core/response.hpp"
#include "core/untrusted_text.hpp"

namespace kstate {

const char* to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::added:
      return "ADDED";
    case WatchEventType::modified:
      return "MODIFIED";
    case WatchEventType::deleted:
      return "DELETED";
    case WatchEventType::bookmark:
      return "BOOKMARK";
    case WatchEventType::error:
      return "ERROR";
  }
  return "ERROR";
}

Error WatchEvent::error_of() const {
  int code = 500;
  if (const auto* value = json::find(object, "code"); value != nullptr && value->IsInt()) {
    code = value->GetInt();
  }
  return error_from_response(code, json::dump(object));
}

Result<WatchEvent> decode_watch_line(std::string_view line, bool keep_managed_fields) {
  auto document = keep_managed_fields ? json::parse(line) : json::parse_api_answer(line);
  if (!document) {
    return Error(ErrorKind::invalid, "watch stream: an event is not valid JSON: " + document.error().message);
  }
  if (!document->IsObject()) {
    return Error(ErrorKind::invalid, "watch stream: an event is not a JSON object");
  }
  auto type = json::get_string(*document, "type");
  WatchEvent event;
  if (type == "ADDED") {
    event.type = WatchEventType::added;
  } else if (type == "MODIFIED") {
    event.type = WatchEventType::modified;
  } else if (type == "DELETED") {
    event.type = WatchEventType::deleted;
  } else if (type == "BOOKMARK") {
    event.type = WatchEventType::bookmark;
  } else if (type == "ERROR") {
    event.type = WatchEventType::error;
  } else {
    return Error(ErrorKind::invalid, "watch stream: unknown event type \"" + printable(type.value_or(""), 64) + "\"");
  }
  const auto* object = json::find(*document, "object");
  if (object == nullptr || !object->IsObject()) {
    return Error(ErrorKind::invalid, "watch stream: an event has no object");
  }
  event.object = json::copy(*object);
  return event;
}

Result<std::vector<WatchEvent>> WatchDecoder::feed(std::string_view bytes) {
  pending_.append(bytes);
  std::vector<WatchEvent> events;
  std::size_t start = 0;
  for (;;) {
    auto end = pending_.find('\n', start);
    if (end == std::string::npos) {
      break;
    }
    std::string_view line(pending_.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) {
      continue;
    }
    auto event = decode_watch_line(line, keep_managed_fields_);
    if (!event) {
      pending_.clear();
      return event.error();
    }
    events.push_back(std::move(event.value()));
  }
  pending_.erase(0, start);
  if (pending_.size() > max_watch_event_bytes) {
    pending_.clear();
    return Error(ErrorKind::unsupported, "watch stream: an event is larger than the limit of " +
                                             std::to_string(max_watch_event_bytes / (1024 * 1024)) + " MiB");
  }
  return events;
}

bool WatchDecoder::has_partial_event() const {
  return pending_.find_first_not_of(" \r\t\n") != std::string::npos;
}

}  // namespace kstate
