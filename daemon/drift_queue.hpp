// When to correct each drifted object (issue 41), as a small state machine with time
// passed in (no I/O, like debouncer.hpp). Events of one object are coalesced: its
// correction is due once it has been quiet for `debounce` (a rollout or an editor's
// two writes become one correction), but no later than `max_delay` after the first.
// An object that drifts again within `fight_window` of kstate's last correction is
// being fought over by another writer: each such round doubles the wait before the
// next correction (from `fight_backoff_initial` up to `fight_backoff_max`), so that
// two writers do not flip a field back and forth as fast as the API server allows;
// the caller counts each round and logs it once per `log_interval` per object. An
// object left alone for `fight_window` after a correction starts afresh.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kstate::daemon {

struct DriftQueueOptions {
  using Duration = std::chrono::steady_clock::duration;
  Duration debounce = std::chrono::milliseconds(100);
  Duration max_delay = std::chrono::seconds(1);
  Duration fight_window = std::chrono::seconds(60);
  Duration fight_backoff_initial = std::chrono::seconds(1);
  Duration fight_backoff_max = std::chrono::minutes(5);
  Duration log_interval = std::chrono::minutes(5);
};

// A drift that came back within the fight window of kstate's last correction.
struct FightRound {
  int rounds = 0;                                 // in a row, this one included
  std::chrono::steady_clock::duration backoff{};  // the wait before the next correction
  bool log = false;                               // first round of this object's log interval
};

class DriftQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  explicit DriftQueue(DriftQueueOptions options = {}) : options_(options) {}

  // `key` drifted at `now`. Returns the fight round when it came back within the fight
  // window of kstate's last correction of it.
  std::optional<FightRound> record(const std::string& key, TimePoint now);
  // When the next correction is due; nullopt when nothing waits.
  std::optional<TimePoint> deadline() const;
  // The objects whose correction is due at `now`, taken out of the queue (call
  // corrected() once their states ran).
  std::vector<std::string> take_due(TimePoint now);
  // kstate ran the state of `key` at `now`.
  void corrected(const std::string& key, TimePoint now);
  // Objects waiting for a correction.
  std::size_t waiting() const;
  // Objects remembered (waiting, or corrected within the fight window).
  std::size_t tracked() const { return objects_.size(); }

 private:
  struct Object {
    bool pending = false;
    TimePoint first{};
    TimePoint last{};
    TimePoint not_before{};  // the fight back-off
    bool corrected = false;
    TimePoint last_correction{};
    int rounds = 0;
    bool logged = false;
    TimePoint last_log{};
  };
  TimePoint due_at(const Object& object) const;

  DriftQueueOptions options_;
  std::map<std::string, Object> objects_;
};

}  // namespace kstate::daemon
