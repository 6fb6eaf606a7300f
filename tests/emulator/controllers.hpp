// The controllers of a cluster, as a client sees them: writes nobody asked for,
// some time after the writes that cause them. kube-controller-manager's
// serviceaccount and root-ca-cert-publisher controllers (the ServiceAccount
// `default` and the ConfigMap `kube-root-ca.crt` in every namespace), namespace
// controller (a deleted namespace's content removed, its status.conditions, then
// the namespace), Deployment controller (status and the
// deployment.kubernetes.io/revision annotation), Job controller (a started Job's
// status) and garbage collector (orphan and foreground finalizers, dependents of
// deleted owners); and kube-apiserver's own CRD controllers (names accepted and
// Established, a deleted CRD's custom resources removed).
//
// They watch the store's history as informers do and act through the API
// server's request handling, as clients with their own identity, so their
// writes get resourceVersions, managedFields and watch events like anyone's.
// Every delay is an option (ControllerOptions); the defaults keep tests fast,
// the comments give the real cluster's figures (recordings 16, 32, 61-62,
// 68-69, 72-73, 76-78).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/json.hpp"
#include "tests/emulator/store.hpp"

namespace kstate::emulator {

class ApiServer;

struct ControllerOptions {
  // serviceaccount controller + root-ca-cert-publisher. A real cluster makes both
  // 5-100 ms after the namespace (recording 16's notes); 0: at once, before the
  // namespace's create is answered. What a client deletes or changes of them is put
  // back on the next tick (or after the delay).
  bool namespace_defaults = true;
  std::chrono::milliseconds namespace_defaults_delay{0};
  // The namespace controller's first pass over a deleted namespace comes this long after
  // the deletion (kube-controller-manager: 5 s after every change of the namespace;
  // recording 78 saw a namespace gone 5.7 s after its DELETE).
  std::chrono::milliseconds namespace_deletion_delay{200};
  // While content remains (finalizers), it looks again this often (real: 15 s).
  std::chrono::milliseconds namespace_recheck_interval{200};
  // The Deployment controller writes status and the revision annotation this long after a
  // spec change (real: well under a second on an idle cluster, 5-22 s in the recordings'
  // busy one); 0: right after the write that changed the spec is answered.
  bool deployment_controller = true;
  std::chrono::milliseconds deployment_delay{0};
  // The Job controller writes a new Job's status (startTime, active...) this long after it.
  bool job_controller = true;
  std::chrono::milliseconds job_delay{0};
  // The garbage collector acts this long after what it reacts to (real: tens of ms,
  // recording 72: a foreground-deleted Deployment gone 0.09 s later); the default is the
  // next tick, so that an object held by its finalizers can be seen.
  std::chrono::milliseconds garbage_collector_delay{1};
  // kube-apiserver accepts a new CRD's names and establishes it this long after its
  // creation (real: 24 ms, recording 62).
  std::chrono::milliseconds crd_establish_delay{500};
  // A spec change of an established CRD (a version added or no longer served) is served
  // this long after it (real: moments, with no bound).
  std::chrono::milliseconds crd_update_delay{0};
  // A deleted CRD: its Terminating condition says deletion is in progress this long after
  // the DELETE, and its custom resources and then the CRD go as long again (real: 52 ms
  // and 128 ms, recording 69).
  std::chrono::milliseconds crd_deletion_delay{0};
};

class Controllers {
 public:
  Controllers(ApiServer& api, ControllerOptions options) : api_(api), options_(options) {}

  const ControllerOptions& options() const { return options_; }
  // Looks at what changed since the last call, then does whatever is due at `now`;
  // repeats while its own writes cause more work (bounded).
  void run(std::chrono::system_clock::time_point now);
  // The next call looks at every object again (after a restore from disk, as
  // kube-controller-manager syncs everything when it starts).
  void resync() { resync_ = true; }

 private:
  using TimePoint = std::chrono::system_clock::time_point;

  void observe(TimePoint now);
  void look_at(const std::string& key, const json::Value& object, bool deleted, TimePoint now);
  bool act(TimePoint now);

  void ensure_namespace_defaults(const std::string& ns);
  // One pass of the namespace controller; false when content remains.
  bool terminate_namespace(const std::string& ns, TimePoint now);
  void sync_deployment(const std::string& key, TimePoint now);
  void start_job(const std::string& key, TimePoint now);
  void establish_crd(const std::string& name, TimePoint now);
  // A deleted CRD: phase 1 sets the condition, phase 2 removes the custom resources and
  // the CRD; false when custom resources remain (their finalizers).
  bool clean_up_crd(const std::string& name, int phase);
  bool collect_garbage();

  ApiServer& api_;
  ControllerOptions options_;
  std::uint64_t seen_ = 0;  // the store revision observed last
  bool resync_ = true;
  std::map<std::string, TimePoint> namespace_defaults_due_;  // namespace -> when
  std::map<std::string, TimePoint> namespace_deletion_due_;  // namespace -> when
  std::map<std::string, TimePoint> deployments_due_;         // object key -> when
  std::map<std::string, TimePoint> jobs_due_;                // object key -> when
  std::map<std::string, TimePoint> crd_establish_due_;       // CRD name -> when
  std::map<std::string, TimePoint> crd_updates_due_;         // CRD name -> when
  struct CrdCleanup {
    TimePoint when;
    int phase = 1;
  };
  std::map<std::string, CrdCleanup> crd_cleanup_;  // CRD name -> next step
  std::map<std::string, std::int64_t> crd_served_generation_;
  // The Deployment controller's memory: uid -> pod template it last saw (a change is a
  // new revision).
  std::map<std::string, std::string> deployment_templates_;
  // The garbage collector's view: uid -> key of every object, owner uid -> dependents.
  std::map<std::string, std::string> keys_by_uid_;
  std::map<std::string, std::set<std::string>> dependents_;
  std::set<std::string> garbage_candidates_;  // keys whose owners may all be gone
  std::set<std::string> finalizing_;          // keys with an orphan or foregroundDeletion finalizer
  std::optional<TimePoint> garbage_due_;      // when the collector next looks at those
};

}  // namespace kstate::emulator
