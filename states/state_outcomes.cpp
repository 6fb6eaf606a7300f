// A state's outcome recorded in its slot (see states/engine_impl.hpp): failed,
// succeeded, or changed (created, updated, adopted, deleted, ...: test mode's pending
// change included) with its diff, the log line each makes, and the server's warnings
// gathered into its result.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "states/engine_impl.hpp"

namespace kstate::states {

namespace {

// Distinct server warnings kept in one state's result (the server sends a handful).
constexpr std::size_t max_warnings_per_state = 16;

}  // namespace

void Engine::Impl::fail(std::size_t index, std::string comment) {
  Slot& slot = slots[index];
  slot.status = SlotStatus::failed;
  slot.result.result = false;
  slot.result.comment = std::move(comment);
  log_with(log_fields(slot, "failed"), spdlog::level::warn, "failed {} ({}): {}", slot.result.name,
           slot.result.source.to_string(), one_line(slot.result.comment));
}

// What a JSON log line about this slot's state carries besides its message.
LogFields Engine::Impl::log_fields(const Slot& slot, std::string_view action) const {
  LogFields fields;
  fields.state_id = slot.result.id;
  fields.kind = slot.ref.gvk.kind;
  fields.namespace_name = slot.ref.ns;
  fields.name = slot.ref.name;
  fields.action = action;
  fields.file = slot.result.source.file;
  fields.line = slot.result.source.line;
  if (slot.started) {
    fields.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - *slot.started).count();
  }
  return fields;
}

// A comment on one log line: the lines after the first (each field an Invalid answer
// or a local check names: "  * spec.replicas: ...") joined with "; ".
std::string Engine::Impl::one_line(std::string_view comment) {
  std::string line;
  for (std::size_t at = 0; at <= comment.size();) {
    std::size_t end = std::min(comment.find('\n', at), comment.size());
    std::string_view part = comment.substr(at, end - at);
    while (part.starts_with(' ')) {
      part.remove_prefix(1);
    }
    if (part.starts_with("* ")) {
      part.remove_prefix(2);
    }
    if (!part.empty()) {
      line += (line.empty() ? "" : "; ") + std::string(part);
    }
    at = end + 1;
  }
  return line;
}

void Engine::Impl::succeed(std::size_t index, std::string comment) {
  Slot& slot = slots[index];
  if (!slot.failed()) {
    slot.status = SlotStatus::succeeded;
  }
  slot.result.result = true;
  slot.result.comment = std::move(comment);
}

// A change made (real mode) or pending (test mode), with its diff.
void Engine::Impl::changed(std::size_t index, Change change, const std::string& diff) {
  Slot& slot = slots[index];
  if (!slot.failed()) {
    slot.status = SlotStatus::succeeded;
  }
  slot.result.change = change;
  const std::string verb = to_string(change);
  slot.made_a_change = true;
  slot.created_by_this_run = slot.created_by_this_run || change == Change::created;
  if (!options.record_diffs) {
    set_only_change(slot.result.changes, verb, slot.result.name);
  } else if (!diff.empty()) {
    set_only_change(slot.result.changes, "diff", diff);
  }
  if (options.test_mode) {
    slot.result.result = std::nullopt;
    slot.result.comment = slot.result.comment.empty() ? "would be " + verb : slot.result.comment;
  } else {
    slot.result.result = true;
    slot.result.comment = verb;
    log_with(log_fields(slot, verb), spdlog::level::info, "{} {} ({})", verb, slot.result.name,
             slot.result.source.to_string());
  }
  if (change == Change::deleted) {
    json::set_string(slot.result.changes, "deleted", slot.result.name, slot.result.changes.GetAllocator());
  }
}

// changes[key] = text. Built in one chunk that fits when it is the first change:
// set_string's member array has room for 16 (512 bytes) and left a long text a chunk
// of its own, 3 KB for a 1 KB diff (2 MB of a 1,000-object cold apply).
void Engine::Impl::set_only_change(json::Document& changes, std::string_view key, std::string_view text) {
  if (!changes.IsObject() || !changes.ObjectEmpty()) {
    json::set_string(changes, key, text, changes.GetAllocator());
    return;
  }
  changes.GetAllocator().reserve(sizeof(json::Value) * 2 + key.size() + text.size() + 32);
  auto one_member = [key, text](json::Document& document) {
    return document.StartObject() && document.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()), true) &&
           document.String(text.data(), static_cast<rapidjson::SizeType>(text.size()), true) && document.EndObject(1);
  };
  changes.Populate(one_member);
}

// The server's warnings on this state's requests go into its result, each once and
// at most max_warnings_per_state, as kubectl shows them ("Warning: ..."); the log has
// each distinct text once per run (a daemon cycle), with the first state it came with.
void Engine::Impl::report_warnings(std::size_t index) {
  Slot& slot = slots[index];
  auto& shown = slot.result.warnings;
  std::size_t left_out = 0;
  // Its pair's read's first (they came before its own requests'), then its own.
  std::vector<std::string> warnings = live_objects.take_warnings(index);
  warnings.insert(warnings.end(), std::make_move_iterator(slot.warnings.begin()),
                  std::make_move_iterator(slot.warnings.end()));
  for (auto& text : warnings) {
    if (std::find(shown.begin(), shown.end(), text) != shown.end()) {
      continue;
    }
    if (shown.size() >= max_warnings_per_state) {
      ++left_out;
      continue;
    }
    if (logged_warnings.insert(text).second) {
      spdlog::warn("Warning: {} ({}, {})", text, slot.result.name, slot.result.source.to_string());
    }
    shown.push_back(std::move(text));
  }
  if (left_out > 0) {
    shown.push_back("(" + std::to_string(left_out) + " more warnings not shown)");
  }
  slot.warnings.clear();
}

}  // namespace kstate::states
