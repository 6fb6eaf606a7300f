// DriftQueue (see drift_queue.hpp).
#include "daemon/drift_queue.hpp"

#include <algorithm>

namespace kstate::daemon {

std::optional<FightRound> DriftQueue::record(const std::string& key, TimePoint now) {
  Object& object = objects_[key];
  std::optional<FightRound> round;
  if (object.corrected && now - object.last_correction <= options_.fight_window) {
    ++object.rounds;
    auto backoff = options_.fight_backoff_initial;
    for (int i = 1; i < object.rounds && backoff < options_.fight_backoff_max; ++i) {
      backoff *= 2;
    }
    backoff = std::min(backoff, options_.fight_backoff_max);
    object.not_before = object.last_correction + backoff;
    object.corrected = false;  // one round per correction, however many events follow it
    const bool log = !object.logged || now - object.last_log >= options_.log_interval;
    if (log) {
      object.logged = true;
      object.last_log = now;
    }
    round = FightRound{object.rounds, backoff, log};
  } else if (object.corrected) {
    object.rounds = 0;  // left alone for the fight window: not a fight
    object.not_before = TimePoint{};
    object.corrected = false;
  }
  if (!object.pending) {
    object.pending = true;
    object.first = now;
  }
  object.last = now;
  return round;
}

DriftQueue::TimePoint DriftQueue::due_at(const Object& object) const {
  return std::max(std::min(object.last + options_.debounce, object.first + options_.max_delay), object.not_before);
}

std::optional<DriftQueue::TimePoint> DriftQueue::deadline() const {
  std::optional<TimePoint> earliest;
  for (const auto& [key, object] : objects_) {
    if (object.pending && (!earliest || due_at(object) < *earliest)) {
      earliest = due_at(object);
    }
  }
  return earliest;
}

std::vector<std::string> DriftQueue::take_due(TimePoint now) {
  std::vector<std::string> due;
  for (auto it = objects_.begin(); it != objects_.end();) {
    Object& object = it->second;
    bool taken = false;
    if (object.pending && now >= due_at(object)) {
      object.pending = false;
      due.push_back(it->first);
      taken = true;
    }
    // Forget objects neither waiting nor corrected within the fight window: memory
    // stays bounded by the objects that drifted lately.
    const bool recent = object.corrected && now - object.last_correction <= options_.fight_window;
    if (!taken && !object.pending && !recent) {
      it = objects_.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

void DriftQueue::corrected(const std::string& key, TimePoint now) {
  Object& object = objects_[key];
  object.corrected = true;
  object.last_correction = now;
}

std::size_t DriftQueue::waiting() const {
  return static_cast<std::size_t>(
      std::count_if(objects_.begin(), objects_.end(), [](const auto& entry) { return entry.second.pending; }));
}

}  // namespace kstate::daemon
