// The engine's waits for one object: until it is ready (a CRD Established, a state's
// `wait`), until it is gone (object_absent's `wait`), or until the cluster has made it
// (object_updated of an object kube-controller-manager makes in a new namespace).
// A time-bounded wait watches the object (one request, woken by each change); a wait
// counted in attempts polls, as MetalK8s does, and so does any wait whose watch is
// refused. Polls follow states/readiness' schedule (wait_schedule) and pause through
// the injected sleep, so that tests never sleep. Readiness itself is decided by the
// pure checks of states/readiness.hpp; this stage does the reading and the waiting.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "core/api_resource.hpp"
#include "core/dynamic_client.hpp"
#include "manifests/state.hpp"
#include "states/readiness.hpp"

namespace kstate::states {

// A pause of the given length (EngineOptions::sleep); unset: a steady_timer.
using SleepFunction = std::function<asio::awaitable<void>(std::chrono::milliseconds)>;
asio::awaitable<void> pause_for(const SleepFunction& sleep, std::chrono::milliseconds duration);

// "5 min", "30 s", "250 ms": a bound as messages name it.
std::string duration_text(std::chrono::milliseconds duration);

// Decides readiness from the object as read or watched; nullptr when it does not
// exist (404, or a DELETED event).
using ReadinessChecker = std::function<ReadinessCheck(const json::Value* object)>;

// Ready by states/readiness' rules; an object deleted meanwhile is not ready.
ReadinessCheck check_exists_ready(const json::Value* object);

// The bounds of a CRD's wait until Established (its custom resources are waiting for
// it: it is polled from 50 ms, at most 1 s apart).
WaitDefaults prompt_wait_defaults(std::chrono::milliseconds timeout);

class ObjectWait {
 public:
  // How each read's answer is taken before the wait looks at it: the engine turns a
  // 404 that is not a Status (a path the server does not serve) into an error, so that
  // it never reads as a missing object. Unset: as answered.
  using ReadFilter = std::function<Result<json::Document>(Result<json::Document>)>;
  struct Options {
    bool watch = true;  // time-bounded waits watch; false: they poll too
    SleepFunction sleep;
    ReadFilter take_read;
  };

  // `display` names the object in messages ("Kind/namespace/name"). `client` and
  // `resource` must outlive the wait.
  ObjectWait(DynamicClient client, const ApiResource& resource, std::string ns, std::string name, std::string display,
             Options options);

  // Waits until `checker` says ready, starting from `current` (nullptr: read it first).
  // `goal` names the awaited state in messages ("ready", "deleted"). A timeout is
  // ErrorKind::timeout, readiness that cannot come ErrorKind::invalid; both say the
  // last reason seen.
  asio::awaitable<Status> until(const json::Value* current, const ReadinessChecker& checker,
                                const manifests::Wait& policy, const WaitDefaults& defaults, const std::string& goal);

  // Until the object of `deleted_uid` is gone (an object of another UID is a new one):
  // `wait`'s attempts or timeout, else `default_timeout`, polled from 200 ms, at most
  // 5 s apart. Reads the object first.
  asio::awaitable<Status> until_gone(const manifests::Wait& wait, std::chrono::milliseconds default_timeout,
                                     const std::string& deleted_uid);

  // Until the object exists, up to `timeout` (polled from 50 ms, at most 1 s apart);
  // `why_absent` says why it is expected, for the message of a wait that runs out.
  // Reads the object first.
  asio::awaitable<Status> until_exists(std::chrono::milliseconds timeout, const std::string& why_absent);

 private:
  enum class WatchOutcome { ready, failed, timed_out, unavailable };
  using Clock = std::chrono::steady_clock;

  asio::awaitable<Result<json::Document>> read();
  asio::awaitable<WatchOutcome> watch_until(const ReadinessChecker& checker, ReadinessCheck& check, std::string version,
                                            Clock::time_point deadline);

  DynamicClient client_;
  const ApiResource& resource_;
  std::string ns_;
  std::string name_;
  std::string display_;
  Options options_;
};

}  // namespace kstate::states
