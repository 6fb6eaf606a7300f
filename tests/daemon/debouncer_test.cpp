// The debounce rule with a fake clock: quiet period, cap on a never-quiet tree, and the
// longer hold while a file is still open for writing.
#include "daemon/debouncer.hpp"

#include <catch2/catch.hpp>

namespace debouncer_test {

using namespace std::chrono_literals;
using kstate::daemon::Debouncer;

TEST_CASE("debouncer fires after the quiet period, restarted by each event") {
  Debouncer debouncer(300ms, 5s, 30s);
  const Debouncer::TimePoint t0{};
  CHECK_FALSE(debouncer.pending());
  CHECK_FALSE(debouncer.deadline(false).has_value());
  debouncer.record(t0);
  debouncer.record(t0 + 200ms);
  CHECK_FALSE(debouncer.due(t0 + 400ms, false));
  CHECK(debouncer.due(t0 + 500ms, false));
  debouncer.reset();
  CHECK_FALSE(debouncer.pending());
}

TEST_CASE("debouncer caps the delay of a tree that never goes quiet") {
  Debouncer debouncer(300ms, 5s, 30s);
  const Debouncer::TimePoint t0{};
  for (auto t = 0ms; t <= 6000ms; t += 100ms) {
    debouncer.record(t0 + t);
    if (debouncer.due(t0 + t, false)) {
      CHECK(t >= 5000ms);
      CHECK(t < 5100ms);
      return;
    }
  }
  FAIL("never fired");
}

TEST_CASE("debouncer holds a batch while a file is being written, up to the hold") {
  Debouncer debouncer(300ms, 5s, 30s);
  const Debouncer::TimePoint t0{};
  debouncer.record(t0);
  CHECK_FALSE(debouncer.due(t0 + 10s, true));  // still open: wait, even past max_delay
  CHECK(debouncer.due(t0 + 30s, true));        // a writer that never closes is not waited for forever
  CHECK(debouncer.due(t0 + 300ms, false));     // closed: the normal rule
}

}  // namespace debouncer_test
