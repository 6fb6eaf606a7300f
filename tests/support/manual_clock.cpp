// ManualClock (manual_clock.hpp): its timers keep their waits in the clock's shared
// state, guarded by one mutex (the test thread advances time while a daemon loop sets
// timers); handlers are always run through the executor, never under the mutex, since
// running or dropping one may destroy a coroutine that owns other timers.
#include "tests/support/manual_clock.hpp"

#include <atomic>
#include <boost/asio/error.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <future>
#include <mutex>
#include <set>
#include <vector>

namespace kstate::testing {

class ManualTimer;

struct ManualClock::State {
  std::mutex mutex;
  SteadyTime steady{std::chrono::hours(1000)};
  WallTime wall;
  std::uint64_t sequence = 0;  // the order timers were set in, for ties
  std::set<ManualTimer*> timers;
  bool io_gone = false;  // the io_context was destroyed: nothing can run any more
  // Handlers posted so far: advance() waits until a round posts none.
  std::atomic<std::uint64_t> posted{0};

  // Moves both times to `when` (never back).
  void move_to(SteadyTime when) {
    if (when > steady) {
      wall += std::chrono::duration_cast<WallTime::duration>(when - steady);
      steady = when;
    }
  }
};

namespace {

using State = ManualClock::State;

// A wait in progress; like asio's, it keeps the io_context's run() from returning.
struct Waiter {
  Timer::Handler handler;
  asio::any_io_executor work;  // the timer's executor, tracking outstanding work
};

void post_all(State& state, std::vector<Waiter> waiters, boost::system::error_code result) {
  {
    std::lock_guard lock(state.mutex);
    if (state.io_gone) {
      return;  // (dropped here, outside the lock)
    }
  }
  for (auto& waiter : waiters) {
    ++state.posted;
    const asio::any_io_executor executor = waiter.work;
    asio::post(executor, [waiter = std::move(waiter), result] { waiter.handler(result); });
  }
}

}  // namespace

class ManualTimer final : public Timer {
 public:
  ManualTimer(std::shared_ptr<State> state, asio::any_io_executor executor_)
      : executor(std::move(executor_)), state_(std::move(state)) {
    std::lock_guard lock(state_->mutex);
    state_->timers.insert(this);
  }
  ~ManualTimer() override {
    std::vector<Waiter> dropped;
    std::lock_guard lock(state_->mutex);
    state_->timers.erase(this);
    dropped.swap(waiters);
    // (`dropped` goes after the lock is released: declared before it)
  }

  void expires_at(TimePoint when) override {
    std::vector<Waiter> aborted;
    {
      std::lock_guard lock(state_->mutex);
      expiry = when;
      sequence = ++state_->sequence;
      aborted.swap(waiters);
    }
    post_all(*state_, std::move(aborted), asio::error::operation_aborted);
  }

  void cancel() override {
    std::vector<Waiter> aborted;
    {
      std::lock_guard lock(state_->mutex);
      aborted.swap(waiters);
    }
    post_all(*state_, std::move(aborted), asio::error::operation_aborted);
  }

  void async_wait(Handler handler) override {
    Waiter waiter{std::move(handler), asio::prefer(executor, asio::execution::outstanding_work.tracked)};
    {
      std::lock_guard lock(state_->mutex);
      if (expiry > state_->steady) {
        waiters.push_back(std::move(waiter));
        return;
      }
    }
    std::vector<Waiter> due;
    due.push_back(std::move(waiter));
    post_all(*state_, std::move(due), {});
  }

  // Guarded by the state's mutex.
  TimePoint expiry{};
  std::uint64_t sequence = 0;
  std::vector<Waiter> waiters;
  const asio::any_io_executor executor;

 protected:
  TimePoint now() const override {
    std::lock_guard lock(state_->mutex);
    return state_->steady;
  }

 private:
  std::shared_ptr<State> state_;
};

namespace {

// The earliest timer with a wait in progress due by `limit`, or null. (Under the mutex.)
ManualTimer* earliest_waiting(const State& state, Clock::SteadyTime limit) {
  ManualTimer* earliest = nullptr;
  for (ManualTimer* timer : state.timers) {
    if (timer->waiters.empty() || timer->expiry > limit) {
      continue;
    }
    if (!earliest || timer->expiry < earliest->expiry ||
        (timer->expiry == earliest->expiry && timer->sequence < earliest->sequence)) {
      earliest = timer;
    }
  }
  return earliest;
}

// Drops every wait when the io_context is destroyed, as asio's own timer service does
// (a wait holds a coroutine, which must go while its executor still exists).
class ManualClockService final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit ManualClockService(asio::execution_context& context) : service(context) {}

  void add(std::weak_ptr<State> state) {
    std::lock_guard lock(mutex_);
    states_.push_back(std::move(state));
  }

 private:
  void shutdown() override {
    std::vector<std::weak_ptr<State>> states;
    {
      std::lock_guard lock(mutex_);
      states.swap(states_);
    }
    for (const auto& weak : states) {
      auto state = weak.lock();
      if (!state) {
        continue;
      }
      std::vector<Waiter> dropped;
      std::lock_guard lock(state->mutex);
      state->io_gone = true;
      for (ManualTimer* timer : state->timers) {
        for (auto& waiter : timer->waiters) {
          dropped.push_back(std::move(waiter));
        }
        timer->waiters.clear();
      }
      // (`dropped` goes after the lock is released: declared before it)
    }
  }

  std::mutex mutex_;
  std::vector<std::weak_ptr<State>> states_;
};

asio::execution_context::id ManualClockService::id;

}  // namespace

ManualClock::ManualClock(asio::io_context& io, WallTime wall_start) : io_(io), state_(std::make_shared<State>()) {
  state_->wall = wall_start;
  asio::use_service<ManualClockService>(static_cast<asio::execution_context&>(io)).add(state_);
}

ManualClock::~ManualClock() = default;

Clock::SteadyTime ManualClock::steady_now() const {
  std::lock_guard lock(state_->mutex);
  return state_->steady;
}

Clock::WallTime ManualClock::wall_now() const {
  std::lock_guard lock(state_->mutex);
  return state_->wall;
}

std::unique_ptr<Timer> ManualClock::make_timer(const asio::any_io_executor& executor) const {
  return std::make_unique<ManualTimer>(state_, executor);
}

void ManualClock::advance(std::chrono::steady_clock::duration duration) {
  SteadyTime target;
  {
    std::lock_guard lock(state_->mutex);
    target = state_->steady + duration;
  }
  for (;;) {
    std::vector<Waiter> due;
    {
      std::lock_guard lock(state_->mutex);
      ManualTimer* next = earliest_waiting(*state_, target);
      if (!next) {
        state_->move_to(target);
        return;
      }
      state_->move_to(next->expiry);
      due.swap(next->waiters);
    }
    post_all(*state_, std::move(due), {});
    settle();
  }
}

void ManualClock::run_elsewhere(std::function<void()> while_waiting) {
  elsewhere_ = true;
  while_waiting_ = std::move(while_waiting);
}

std::optional<Clock::SteadyTime> ManualClock::next_due() const {
  std::lock_guard lock(state_->mutex);
  const ManualTimer* next = earliest_waiting(*state_, SteadyTime::max());
  return next ? std::optional(next->expiry) : std::nullopt;
}

void ManualClock::settle() {
  if (!elsewhere_) {
    io_.restart();  // (poll() stops an io_context it finds out of work)
    while (io_.poll() > 0) {
    }
    return;
  }
  // The loop runs handlers in the order they were posted: once a marker posted after
  // them has run, they have too. What they posted meanwhile needs another round.
  for (;;) {
    const std::uint64_t before = state_->posted;
    auto marker = std::make_shared<std::promise<void>>();
    auto reached = marker->get_future();
    asio::post(io_, [marker] { marker->set_value(); });
    while (reached.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (io_.stopped()) {
        return;  // the loop ended: nothing runs any more
      }
      if (while_waiting_) {
        while_waiting_();
      }
    }
    if (state_->posted == before) {
      return;
    }
  }
}

}  // namespace kstate::testing
