// DriftQueue with time passed in: events of one object coalesced (debounce, max delay),
// objects independent of each other, a writer undoing kstate's corrections backed off
// from (doubling, capped) and logged once per interval, a fight forgotten once the
// object stays as kstate left it.
#include "daemon/drift_queue.hpp"

#include <catch2/catch.hpp>

namespace drift_queue_test {

using namespace kstate::daemon;
using namespace std::chrono_literals;
using TimePoint = DriftQueue::TimePoint;

namespace {

DriftQueueOptions options() {
  DriftQueueOptions o;
  o.debounce = 100ms;
  o.max_delay = 1s;
  o.fight_window = 60s;
  o.fight_backoff_initial = 1s;
  o.fight_backoff_max = 8s;
  o.log_interval = 5min;
  return o;
}

}  // namespace

TEST_CASE("events of one object are coalesced: due once quiet for the debounce, at most max_delay after the first",
          "[drift]") {
  DriftQueue queue(options());
  const TimePoint t0{};
  CHECK_FALSE(queue.deadline().has_value());
  queue.record("Deployment/default/web", t0);
  queue.record("Deployment/default/web", t0 + 50ms);
  REQUIRE(queue.deadline().has_value());
  CHECK(*queue.deadline() == t0 + 150ms);
  CHECK(queue.take_due(t0 + 149ms).empty());
  CHECK(queue.take_due(t0 + 150ms) == std::vector<std::string>{"Deployment/default/web"});
  CHECK_FALSE(queue.deadline().has_value());

  // A stream of events never quiet for the debounce: due at max_delay.
  DriftQueue busy(options());
  for (auto at = 0ms; at <= 2000ms; at += 50ms) {
    busy.record("ConfigMap/default/c", t0 + at);
    if (!busy.take_due(t0 + at).empty()) {
      CHECK(at == 1000ms);
      return;
    }
  }
  FAIL("never due");
}

TEST_CASE("objects are independent: each due on its own events", "[drift]") {
  DriftQueue queue(options());
  const TimePoint t0{};
  queue.record("a", t0);
  queue.record("b", t0 + 80ms);
  CHECK(queue.take_due(t0 + 100ms) == std::vector<std::string>{"a"});
  CHECK(queue.waiting() == 1);
  CHECK(queue.take_due(t0 + 180ms) == std::vector<std::string>{"b"});
}

TEST_CASE("a writer undoing each correction: rounds counted, the wait doubles up to the cap, logged once per interval",
          "[drift]") {
  DriftQueue queue(options());
  TimePoint now{};
  queue.record("web", now);
  REQUIRE(queue.take_due(now + 100ms).size() == 1);
  now += 200ms;
  queue.corrected("web", now);
  std::vector<std::chrono::seconds> waits;
  std::vector<bool> logs;
  for (int round = 1; round <= 6; ++round) {
    now += 10ms;  // the other writer undoes it at once
    auto fight = queue.record("web", now);
    REQUIRE(fight.has_value());
    CHECK(fight->rounds == round);
    waits.push_back(std::chrono::duration_cast<std::chrono::seconds>(fight->backoff));
    logs.push_back(fight->log);
    // Further events of the same round count once.
    CHECK_FALSE(queue.record("web", now + 1ms).has_value());
    const TimePoint due = *queue.deadline();
    CHECK(queue.take_due(due - 1ms).empty());
    CHECK(queue.take_due(due).size() == 1);
    now = due;
    queue.corrected("web", now);
  }
  CHECK(waits == std::vector<std::chrono::seconds>{1s, 2s, 4s, 8s, 8s, 8s});
  CHECK(logs == std::vector<bool>{true, false, false, false, false, false});
}

TEST_CASE("drift long after kstate's correction is not a fight; idle objects are forgotten", "[drift]") {
  DriftQueue queue(options());
  TimePoint now{};
  queue.record("web", now);
  queue.take_due(now + 100ms);
  queue.corrected("web", now + 200ms);
  now += 61s;
  CHECK_FALSE(queue.record("web", now).has_value());
  CHECK(*queue.deadline() == now + 100ms);
  queue.take_due(now + 100ms);
  queue.corrected("web", now + 100ms);
  CHECK(queue.tracked() == 1);
  queue.take_due(now + 100ms + 61s);
  CHECK(queue.tracked() == 0);
}

}  // namespace drift_queue_test
