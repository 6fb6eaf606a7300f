// When to hand a batch of file events to the reconciler: after the tree has been quiet
// for `quiet` (so an editor's save, several events, becomes one reload), but no later
// than `max_delay` after the first event (a file rewritten in a loop still gets picked
// up), unless a file is still being written, which is held up to `write_hold` (so
// `cat > file` typed slowly is never read half-written). Pure: time is passed in.
#pragma once

#include <chrono>
#include <optional>

namespace kstate::daemon {

class Debouncer {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;
  using Duration = Clock::duration;

  Debouncer(Duration quiet, Duration max_delay, Duration write_hold)
      : quiet_(quiet), max_delay_(max_delay), write_hold_(write_hold) {}

  // Something happened at `now`.
  void record(TimePoint now) {
    if (!pending_) {
      first_ = now;
      pending_ = true;
    }
    last_ = now;
  }

  bool pending() const { return pending_; }

  // When the batch is due; nullopt when nothing is pending.
  std::optional<TimePoint> deadline(bool writes_in_progress) const {
    if (!pending_) {
      return std::nullopt;
    }
    if (writes_in_progress) {
      return last_ + write_hold_;
    }
    return std::min(last_ + quiet_, first_ + max_delay_);
  }

  bool due(TimePoint now, bool writes_in_progress) const {
    auto when = deadline(writes_in_progress);
    return when && now >= *when;
  }

  // The batch was handed over.
  void reset() { pending_ = false; }

 private:
  Duration quiet_;
  Duration max_delay_;
  Duration write_hold_;
  // (No std::optional here: GCC 12 reports a false maybe-uninitialized on it at -O2.)
  bool pending_ = false;
  TimePoint first_{};
  TimePoint last_{};
};

}  // namespace kstate::daemon
