// The daemon's configuration: a YAML file (default /etc/kstate/config.yaml) whose
// every key is also a command-line flag, flags overriding the file. One table of keys
// drives the file parser, the flags and the error messages, so a key cannot exist in
// one place and not the other. Parsing is pure: text in, DaemonConfig or an Error
// naming the key (and file:line) out.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.hpp"
#include "core/error.hpp"
#include "manifests/ignore_fields.hpp"
#include "manifests/variables.hpp"
#include "states/report.hpp"

namespace kstate::daemon {

// text: time, level and message; journal: `<N>` priority prefixes for journald (chosen
// by itself when stderr is the journal); json: one object per line with structured fields.
enum class LogFormat { text, journal, json };

// Lease-based leader election, with client-go's defaults (leaderelection.LeaderElectionConfig).
struct LeaderElectionConfig {
  bool enabled = false;
  std::string lease_name = "kstate";
  std::string lease_namespace = "kube-system";
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
};

struct DaemonConfig {
  std::string manifests_dir = "/etc/kstate/manifests";
  std::string kubeconfig;  // empty: found as kubectl finds it
  std::string context;     // empty: the kubeconfig's current context
  Duration resync_interval = std::chrono::minutes(5);
  // A reconcile with failed states (a namespace still terminating, a webhook down, the
  // API server gone) is run again this long after, doubling while it keeps failing, up
  // to resync-interval: a transient failure heals in seconds, not at the next resync.
  // 0: failures wait for the next resync or file change.
  Duration retry_interval = std::chrono::seconds(10);
  // Short, so that a saved file is applied at once (an editor's save, a `git pull` or a
  // `cp -r` are one burst of events); a write still open is waited for (write_hold).
  Duration debounce = std::chrono::milliseconds(20);
  int concurrency = 16;
  double qps = 500.0;
  // One cycle's worth at full speed: a cold apply of 1,000 objects is ~1,100 requests.
  int burst = 2000;
  std::string field_manager = "kstate";
  // Watch the kinds kstate manages and correct drift within a second (issue 41);
  // false: only the resync corrects it.
  bool watch_drift = true;
  std::string applyset_name = "kstate";
  std::string applyset_namespace = "kube-system";
  bool prune = true;  // the daemon prunes by default, unlike `kstate apply`
  // Objects a file change took out of the manifests are pruned by a full reconcile once
  // the folder has been quiet this long, not by the change's own reconcile: an object
  // moved to another file by a second write is never deleted in between. 0: at once.
  Duration prune_delay = std::chrono::seconds(2);
  bool allow_empty_prune = false;
  bool adopt = true;  // take over existing objects the manifests declare (issue #7)
  // Objects taken over even when another tool manages them (states/adoption.hpp).
  std::set<std::string> adopt_objects;
  LeaderElectionConfig leader_election;
  std::string listen_address = "127.0.0.1:9842";
  // TCP connect and TLS handshake with the API server (TransportOptions::connect_timeout),
  // and one request's whole answer (request_timeout): a frozen server is noticed
  // (/readyz, the log) within one request timeout.
  Duration connect_timeout = std::chrono::seconds(10);
  Duration request_timeout = std::chrono::seconds(30);
  std::string cache_dir = "/var/cache/kstate";
  std::string state_dir = "/var/lib/kstate";
  std::string log_level = "info";
  LogFormat log_format = LogFormat::text;
  // What each reconcile logs of a change: concise, terse and mixed one line per object
  // created, configured, adopted, pruned or failed; changes and full its diff too.
  states::StateOutput state_output = states::StateOutput::concise;
  // Refuse manifests that are writable by other users (they would let them act as kstate).
  bool check_manifest_permissions = true;
  // Values of ${NAME} in manifests (manifests/variables.hpp): `vars` wins over the
  // `vars-from` files, and a later file over an earlier one. The files are read at
  // every full reconcile (start, resync, SIGHUP).
  manifests::VariableMap vars;
  std::vector<std::string> vars_from;
  // Fields left to other writers, by kind (manifests/ignore_fields.hpp).
  std::vector<manifests::IgnoreFieldsRule> ignore_fields;
};

inline constexpr std::string_view default_config_path = "/etc/kstate/config.yaml";

// One configuration key: its dotted path in the file ("leader-election.lease-duration")
// and its flag ("--leader-election-lease-duration").
struct ConfigKey {
  // What the key holds in the file. A mapping (`vars`: NAME: value) or a list
  // (`vars-from`) is given to its setter one entry at a time ("NAME=VALUE", or the
  // item), and so is each use of its flag, which may be repeated.
  enum class Shape { value, mapping, list };
  std::string_view path;
  std::string_view description;
  bool is_bool = false;
  Shape shape = Shape::value;
  std::string_view flag_name;  // when the flag is not named after the path ("var" for `vars`)
  std::string flag() const;    // "--" + flag_name, or + path with dots replaced by dashes
};

// Every key the daemon understands, in documentation order.
const std::vector<ConfigKey>& config_keys();

// The key at `path` (as in config_keys()), or nullptr.
const ConfigKey* find_config_key(std::string_view path);
// Why `value` is not a valid value of the key at `path` (the message its setter gives
// in a config file), or nullopt when it is. kstate apply's flags of the same keys check
// their values with it, so that the two never accept different values.
std::optional<std::string> config_value_problem(std::string_view path, const std::string& value);

// A value given on the command line for a key (path as in config_keys()).
struct ConfigOverride {
  std::string key;
  std::string value;
};

// Parses YAML text on top of `base` (normally the defaults). `source` names the file in
// errors ("config.yaml:12: resync-interval: invalid duration ..."). An empty document is
// the defaults.
Result<DaemonConfig> parse_config(std::string_view yaml_text, std::string_view source,
                                  DaemonConfig base = DaemonConfig{});

// Applies flag values in order (later wins), then checks the combination.
Result<DaemonConfig> apply_overrides(DaemonConfig config, const std::vector<ConfigOverride>& overrides);

// Cross-key checks (lease timings) that a single key cannot see.
Status validate(const DaemonConfig& config);

// Loads the file (a missing file is only an error when `required`, i.e. given with
// --config), then applies the overrides. The whole start-up path of the config.
Result<DaemonConfig> load_config(const std::string& path, bool required, const std::vector<ConfigOverride>& overrides);

// Splits "host:port" ("[::1]:9842" for IPv6); used to check listen-address.
struct HostPort {
  std::string host;
  unsigned short port = 0;
};
Result<HostPort> parse_host_port(std::string_view address);
// Whether a listen-address host only takes connections from this machine (127.0.0.0/8,
// ::1, localhost). The endpoints have no authentication: the daemon warns otherwise.
bool is_loopback_host(std::string_view host);

std::string_view to_string(LogFormat format);

}  // namespace kstate::daemon
