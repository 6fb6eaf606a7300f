// Readiness of an object as read from the API server, decided from its JSON alone:
// CRD Established and NamesAccepted, Namespace Active, Deployment/StatefulSet/DaemonSet
// rolled out (the arithmetic of `kubectl rollout status`), Job complete, PVC Bound, and
// the generic status.conditions[type=Ready] with observedGeneration; plus "deleted".
// Each answer carries the reason a user sees when a wait runs out. Also the arithmetic
// of MetalK8s-style wait policies (attempts / sleep / timeout) as a schedule of delays.
// Pure logic: the engine fetches or watches, sleeps and calls these.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "manifests/state.hpp"

namespace kstate::states {

enum class Readiness {
  ready,
  not_ready,  // keep waiting
  failed,     // will not become ready by waiting (Job Failed, PVC Lost, deadline exceeded)
};
const char* to_string(Readiness readiness);

struct ReadinessCheck {
  Readiness readiness = Readiness::not_ready;
  std::string reason;  // why not ready (or what was checked when ready)
  bool ready() const { return readiness == Readiness::ready; }
};

// Dispatches on apiVersion/kind. Kinds without a readiness signal (ConfigMap, Service,
// custom resources without conditions) are ready once they exist.
ReadinessCheck check_ready(const json::Value& object);

// Individual checks, for callers that already know the kind.
ReadinessCheck check_crd_ready(const json::Value& object);
ReadinessCheck check_namespace_ready(const json::Value& object);
ReadinessCheck check_deployment_ready(const json::Value& object);
ReadinessCheck check_statefulset_ready(const json::Value& object);
ReadinessCheck check_daemonset_ready(const json::Value& object);
ReadinessCheck check_job_ready(const json::Value& object);
ReadinessCheck check_pvc_ready(const json::Value& object);
ReadinessCheck check_ready_condition(const json::Value& object);

// Whether an object is gone: `live` is nullptr when the server answered 404. An object
// with another UID than the one deleted is a new object, so the old one is gone. While
// it is not, the reason quotes what it reports about itself (self_report).
ReadinessCheck check_deleted(const json::Value* live, std::string_view deleted_uid = {});

// How a condition's status reads for a user waiting on the object.
enum class ConditionHealth {
  healthy,    // as it should be: not worth quoting (Available=True, NamespaceContentRemaining=False)
  unhealthy,  // says what is wrong or pending (Available=False, NamespaceFinalizersRemaining=True)
  news,       // a type whose polarity kstate does not know, or one always worth quoting (Progressing)
};
// The decision for one condition: known types by their polarity, every other type news.
ConditionHealth condition_health(std::string_view type, std::string_view status);

// What an object reports about itself, for the message of a wait that runs out (a
// Namespace that will not go away, a Deployment that does not roll out): its
// status.conditions that are not healthy, as `Type=Status (Reason: message)`, and the
// finalizers it still carries (metadata.finalizers, and a Namespace's
// spec.finalizers). Server text is made printable and bounded. Empty when it says
// nothing. Pure: the engine passes the last object it saw.
std::string self_report(const json::Value& object);

// How long and how often to re-check. Delays are between consecutive checks: the
// engine checks, sleeps delays[0], checks, ... and gives up after the last check or at
// the deadline, whichever comes first.
struct WaitDefaults {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // `wait: true` alone
  std::chrono::milliseconds initial_delay{std::chrono::milliseconds(500)};
  std::chrono::milliseconds max_delay{std::chrono::seconds(10)};
  double backoff_factor = 2.0;
};

struct WaitSchedule {
  bool enabled = false;
  std::vector<std::chrono::milliseconds> delays;
  std::optional<std::chrono::milliseconds> deadline;  // from the first check; none = attempts only
  std::size_t checks() const { return enabled ? delays.size() + 1 : 0; }
};

// MetalK8s semantics: `attempts` checks with `sleep` seconds between them; without
// sleep, exponential backoff (initial_delay, x backoff_factor, capped at max_delay);
// `timeout` alone: backoff until the timeout (the last delay shortened to end on it);
// `wait: true` alone: the default timeout. A timeout also bounds attempts.
WaitSchedule wait_schedule(const manifests::Wait& wait, const WaitDefaults& defaults = {});

}  // namespace kstate::states
