// Watch events and the pure, incremental decoder of a watch response body: the API
// server sends one JSON object per line ({"type": "ADDED", "object": {...}}), split
// across network reads anywhere. Feeding bytes returns the complete events so far.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate {

enum class WatchEventType { added, modified, deleted, bookmark, error };
const char* to_string(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::added;
  // The object; for ERROR events a Status (see error_of()).
  json::Document object;
  // For ERROR events: the Status decoded into an Error (410 Gone: restart the watch).
  Error error_of() const;
};

// An event line longer than this ends the stream with an error (the API server's
// objects are at most 1.5 MiB; an unending line must not grow the buffer forever).
inline constexpr std::size_t max_watch_event_bytes = 16 * 1024 * 1024;

class WatchDecoder {
 public:
  // `keep_managed_fields`: objects keep metadata.managedFields (dropped otherwise).
  explicit WatchDecoder(bool keep_managed_fields = false) : keep_managed_fields_(keep_managed_fields) {}
  // Appends bytes; returns the events completed by them. A malformed line is an error
  // (the stream cannot be trusted after it).
  Result<std::vector<WatchEvent>> feed(std::string_view bytes);
  // Bytes of an unfinished line are waiting (the stream ended mid-event if true at EOF).
  bool has_partial_event() const;

 private:
  std::string pending_;
  bool keep_managed_fields_ = false;
};

// Decodes one line ({"type":..., "object":...}), without the object's managedFields
// unless `keep_managed_fields`.
Result<WatchEvent> decode_watch_line(std::string_view line, bool keep_managed_fields = false);

}  // namespace kstate
