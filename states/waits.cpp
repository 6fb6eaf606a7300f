// The engine's waits for one object (see waits.hpp): watch else poll, each read taken
// through the caller's filter, each pause through the injected sleep.
#include "states/waits.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace kstate::states {

using json::resource_version;

asio::awaitable<void> pause_for(const SleepFunction& sleep, std::chrono::milliseconds duration) {
  if (sleep) {
    co_await sleep(duration);
    co_return;
  }
  asio::steady_timer timer(co_await asio::this_coro::executor, duration);
  co_await timer.async_wait(asio::use_awaitable);
}

std::string duration_text(std::chrono::milliseconds duration) {
  auto ms = duration.count();
  if (ms >= 60'000 && ms % 60'000 == 0) {
    return std::to_string(ms / 60'000) + " min";
  }
  if (ms >= 1000 && ms % 1000 == 0) {
    return std::to_string(ms / 1000) + " s";
  }
  return std::to_string(ms) + " ms";
}

ReadinessCheck check_exists_ready(const json::Value* object) {
  if (object == nullptr) {
    return {Readiness::not_ready, "it was deleted while kstate waited"};
  }
  return check_ready(*object);
}

WaitDefaults prompt_wait_defaults(std::chrono::milliseconds timeout) {
  WaitDefaults defaults;
  defaults.timeout = timeout;
  defaults.initial_delay = std::chrono::milliseconds(50);
  defaults.max_delay = std::chrono::milliseconds(1000);
  return defaults;
}

ObjectWait::ObjectWait(DynamicClient client, const ApiResource& resource, std::string ns, std::string name,
                       std::string display, Options options)
    : client_(client),
      resource_(resource),
      ns_(std::move(ns)),
      name_(std::move(name)),
      display_(std::move(display)),
      options_(std::move(options)) {}

asio::awaitable<Result<json::Document>> ObjectWait::read() {
  std::string subresource;
  auto answer = co_await client_.get(resource_, ns_, name_, subresource);
  if (options_.take_read) {
    co_return options_.take_read(std::move(answer));
  }
  co_return answer;
}

asio::awaitable<Status> ObjectWait::until(const json::Value* current, const ReadinessChecker& checker,
                                          const manifests::Wait& policy, const WaitDefaults& defaults,
                                          const std::string& goal) {
  const std::string& what = display_;
  json::Document first;
  if (current == nullptr) {
    auto got = co_await read();
    if (!got.ok() && got.error().kind != ErrorKind::not_found) {
      co_return Error(got.error().kind, "cannot read " + what + ": " + got.error().describe());
    }
    if (got.ok()) {
      first = std::move(got).value();
      current = &first;
    }
  }
  ReadinessCheck check = checker(current);
  if (check.readiness == Readiness::ready) {
    co_return ok_status();
  }
  if (check.readiness == Readiness::failed) {
    co_return Error(ErrorKind::invalid, what + " will not become " + goal + ": " + check.reason);
  }
  WaitSchedule schedule = wait_schedule(policy, defaults);
  auto started = Clock::now();
  spdlog::info("waiting for {} to be {}: {}", what, goal, check.reason);
  if (options_.watch && policy.attempts <= 0 && schedule.deadline) {
    std::string version = current != nullptr ? resource_version(*current) : "";
    auto watched = co_await watch_until(checker, check, version, started + *schedule.deadline);
    if (watched == WatchOutcome::ready) {
      co_return ok_status();
    }
    if (watched == WatchOutcome::failed) {
      co_return Error(ErrorKind::invalid, what + " will not become " + goal + ": " + check.reason);
    }
    if (watched == WatchOutcome::timed_out) {
      co_return Error(ErrorKind::timeout, "timed out after " + duration_text(*schedule.deadline) + " waiting for " +
                                              what + " to be " + goal + ": " + check.reason);
    }
  }
  for (std::chrono::milliseconds delay : schedule.delays) {
    if (schedule.deadline && Clock::now() - started >= *schedule.deadline) {
      break;
    }
    co_await pause_for(options_.sleep, delay);
    auto got = co_await read();
    if (!got.ok() && got.error().kind != ErrorKind::not_found) {
      check.reason = "it could not be read: " + got.error().describe();
      continue;
    }
    check = checker(got.ok() ? &*got : nullptr);
    if (check.readiness == Readiness::ready) {
      co_return ok_status();
    }
    if (check.readiness == Readiness::failed) {
      co_return Error(ErrorKind::invalid, what + " will not become " + goal + ": " + check.reason);
    }
  }
  std::string bound = policy.attempts > 0 ? std::to_string(schedule.checks()) + " checks"
                                          : duration_text(schedule.deadline.value_or(defaults.timeout));
  co_return Error(ErrorKind::timeout,
                  "timed out after " + bound + " waiting for " + what + " to be " + goal + ": " + check.reason);
}

// Watches the object (fieldSelector on its name) from `version` until `checker` says
// ready or failed, or `deadline` passes (the server ends each watch at its
// timeoutSeconds, so no client timer is needed). A watch that expired (410) is resumed
// from a fresh read; a refused watch answers unavailable. `check` keeps the last
// answer, for the message.
asio::awaitable<ObjectWait::WatchOutcome> ObjectWait::watch_until(const ReadinessChecker& checker,
                                                                  ReadinessCheck& check, std::string version,
                                                                  Clock::time_point deadline) {
  int quiet_watches = 0;  // watches that ended before any event: a server ending them early
  int resyncs = 0;        // watches refused in a row as too old (410)
  while (true) {
    if (quiet_watches >= 3 || resyncs >= 3) {
      co_return WatchOutcome::unavailable;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      co_return WatchOutcome::timed_out;
    }
    ListOptions list;
    list.field_selector = "metadata.name=" + name_;
    list.resource_version = version;
    list.allow_watch_bookmarks = true;
    list.timeout_seconds = std::max<std::int64_t>(1, (left.count() + 999) / 1000);
    auto stream = co_await client_.watch(resource_, ns_, list);
    if (!stream.ok()) {
      spdlog::debug("watch of {} refused ({}), polling instead", display_, stream.error().describe());
      co_return WatchOutcome::unavailable;
    }
    bool resync = false;
    ++quiet_watches;
    while (!resync) {
      auto event = co_await stream->next();
      if (!event.ok() || !event->has_value()) {
        break;  // ended (timeoutSeconds or a dropped connection): watch again from `version`
      }
      quiet_watches = 0;
      const WatchEvent& change = **event;
      if (change.type == WatchEventType::error) {
        resync = true;  // typically 410 Gone: the version is too old to resume from
        ++resyncs;
        break;
      }
      resyncs = 0;
      std::string seen = resource_version(change.object);
      if (!seen.empty()) {
        version = seen;
      }
      if (change.type == WatchEventType::bookmark) {
        continue;
      }
      check = checker(change.type == WatchEventType::deleted ? nullptr : &change.object);
      if (check.readiness != Readiness::not_ready) {
        co_return check.readiness == Readiness::ready ? WatchOutcome::ready : WatchOutcome::failed;
      }
    }
    if (resync) {
      auto got = co_await read();
      if (!got.ok() && got.error().kind != ErrorKind::not_found) {
        co_return WatchOutcome::unavailable;
      }
      // Watch again from "now": the object's own resourceVersion may be older than
      // the history the server kept, and a watch without one starts with the
      // object's current state (an ADDED event).
      version.clear();
      check = checker(got.ok() ? &*got : nullptr);
      if (check.readiness != Readiness::not_ready) {
        co_return check.readiness == Readiness::ready ? WatchOutcome::ready : WatchOutcome::failed;
      }
    }
  }
}

asio::awaitable<Status> ObjectWait::until_gone(const manifests::Wait& wait, std::chrono::milliseconds default_timeout,
                                               const std::string& deleted_uid) {
  manifests::Wait policy = wait;
  policy.enabled = true;
  WaitDefaults defaults;
  defaults.timeout = default_timeout;
  defaults.initial_delay = std::chrono::milliseconds(200);
  defaults.max_delay = std::chrono::seconds(5);
  const ReadinessChecker checker = [&deleted_uid](const json::Value* object) {
    return check_deleted(object, deleted_uid);
  };
  const std::string goal = "deleted";
  const json::Value* unknown = nullptr;  // read it first
  co_return co_await until(unknown, checker, policy, defaults, goal);
}

asio::awaitable<Status> ObjectWait::until_exists(std::chrono::milliseconds timeout, const std::string& why_absent) {
  manifests::Wait policy;
  policy.enabled = true;
  WaitDefaults defaults = prompt_wait_defaults(timeout);
  const ReadinessChecker exists = [&why_absent](const json::Value* object) {
    return object != nullptr ? ReadinessCheck{Readiness::ready, ""} : ReadinessCheck{Readiness::not_ready, why_absent};
  };
  const std::string goal = "made";
  const json::Value* unknown = nullptr;  // read it first
  co_return co_await until(unknown, exists, policy, defaults, goal);
}

}  // namespace kstate::states
