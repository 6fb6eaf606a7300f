// Config parsing: the key table below is the single source of truth for the file,
// the flags and the documentation. Each setter checks its own value; validate() checks
// the combinations. Errors always start with where the value came from and the key.
#include "daemon/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <system_error>

#include "daemon/logging.hpp"
#include "manifests/loader.hpp"
#include "manifests/object_validation.hpp"
#include "states/adoption.hpp"

namespace kstate::daemon {
namespace {

using namespace std::chrono_literals;
using Setter = std::function<Status(DaemonConfig&, const std::string&)>;

Error bad_value(std::string why) {
  return Error(ErrorKind::invalid_input, std::move(why));
}

Setter string_setter(std::string DaemonConfig::*member, bool allow_empty) {
  return [member, allow_empty](DaemonConfig& config, const std::string& value) -> Status {
    if (!allow_empty && value.empty()) {
      return bad_value("must not be empty");
    }
    config.*member = value;
    return ok_status();
  };
}

// A name the API server must accept (the ApplySet parent's, the Lease's): `check`
// says why not.
Setter name_setter(std::function<std::string&(DaemonConfig&)> field, std::string (*check)(std::string_view)) {
  return [field, check](DaemonConfig& config, const std::string& value) -> Status {
    if (std::string problem = check(value); !problem.empty()) {
      return bad_value(std::move(problem));
    }
    field(config) = value;
    return ok_status();
  };
}

Result<bool> parse_bool(const std::string& value) {
  // YAML 1.2 booleans only: "yes"/"on" are strings in 1.2 and a trap in 1.1.
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "true") {
    return true;
  }
  if (lower == "false") {
    return false;
  }
  return bad_value("expected true or false, got \"" + value + "\"");
}

Setter bool_setter(std::function<bool&(DaemonConfig&)> field) {
  return [field](DaemonConfig& config, const std::string& value) -> Status {
    auto parsed = parse_bool(value);
    if (!parsed) {
      return parsed.error();
    }
    field(config) = *parsed;
    return ok_status();
  };
}

// A duration of at least `minimum` (a smaller value would busy-loop the daemon or
// flood the API server: `resync-interval: 1ns`), or 0 when `zero_means` says what 0 does.
Setter duration_setter(std::function<Duration&(DaemonConfig&)> field, Duration minimum,
                       std::string_view zero_means = {}) {
  return [field, minimum, zero_means](DaemonConfig& config, const std::string& value) -> Status {
    auto parsed = parse_duration(value);
    if (!parsed) {
      return parsed.error();
    }
    const bool zero_allowed = !zero_means.empty();
    if (*parsed < minimum && !(zero_allowed && parsed->count() == 0)) {
      return bad_value("must be at least " + format_duration(minimum) +
                       (zero_allowed ? " (or 0s: " + std::string(zero_means) + ")" : std::string()) + ", got " + value);
    }
    field(config) = *parsed;
    return ok_status();
  };
}

Setter int_setter(int DaemonConfig::*member, int minimum, int maximum) {
  return [member, minimum, maximum](DaemonConfig& config, const std::string& value) -> Status {
    int parsed = 0;
    const auto* end = value.data() + value.size();
    auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
    if (ec != std::errc() || ptr != end) {
      return bad_value("expected an integer, got \"" + value + "\"");
    }
    if (parsed < minimum || parsed > maximum) {
      return bad_value("must be between " + std::to_string(minimum) + " and " + std::to_string(maximum) + ", got " +
                       value);
    }
    config.*member = parsed;
    return ok_status();
  };
}

Status set_qps(DaemonConfig& config, const std::string& value) {
  double parsed = 0;
  const auto* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (ec != std::errc() || ptr != end || value.empty()) {
    return bad_value("expected a number, got \"" + value + "\"");
  }
  if (!(parsed > 0)) {
    return bad_value("must be greater than 0, got " + value);
  }
  config.qps = parsed;
  return ok_status();
}

Status set_log_level(DaemonConfig& config, const std::string& value) {
  const auto name = log_level_name(value);
  if (!name) {
    return bad_value("expected one of trace, debug, info, warn, error, off (or kubectl's 0-10), got \"" + value + "\"");
  }
  config.log_level = std::string(*name);
  return ok_status();
}

Status set_log_format(DaemonConfig& config, const std::string& value) {
  if (value == "text") {
    config.log_format = LogFormat::text;
  } else if (value == "journal") {
    config.log_format = LogFormat::journal;
  } else if (value == "json") {
    config.log_format = LogFormat::json;
  } else {
    return bad_value("expected text, journal or json, got \"" + value + "\"");
  }
  return ok_status();
}

Status set_state_output(DaemonConfig& config, const std::string& value) {
  const auto output = states::parse_state_output(value);
  if (!output) {
    return bad_value("expected concise, terse, mixed, changes or full, got \"" + value + "\"");
  }
  config.state_output = *output;
  return ok_status();
}

Status set_listen_address(DaemonConfig& config, const std::string& value) {
  auto parsed = parse_host_port(value);
  if (!parsed) {
    return parsed.error();
  }
  config.listen_address = value;
  return ok_status();
}

// `vars` entries, one "NAME=VALUE" at a time (the file's NAME: value, or --var).
Status add_variable(DaemonConfig& config, const std::string& assignment) {
  if (auto problem = manifests::add_assignment(assignment, config.vars)) {
    return bad_value(std::move(*problem));
  }
  return ok_status();
}

Status add_variables_file(DaemonConfig& config, const std::string& path) {
  if (path.empty()) {
    return bad_value("expected a file path");
  }
  config.vars_from.push_back(path);
  return ok_status();
}

Status add_ignore_fields_rule(DaemonConfig& config, const std::string& text) {
  auto rule = manifests::parse_ignore_fields_rule(text);
  if (!rule.ok()) {
    return bad_value(rule.error().message);
  }
  config.ignore_fields.push_back(std::move(*rule));
  return ok_status();
}

struct KeyEntry {
  ConfigKey key;
  Setter setter;
};

const std::vector<KeyEntry>& key_table() {
  static const std::vector<KeyEntry> table = [] {
    std::vector<KeyEntry> t;
    auto add = [&t](std::string_view path, std::string_view description, Setter setter, bool is_bool = false) {
      t.push_back({ConfigKey{path, description, is_bool, ConfigKey::Shape::value, {}}, std::move(setter)});
    };
    auto add_collection = [&t](std::string_view path, std::string_view flag_name, ConfigKey::Shape shape,
                               std::string_view description, Setter setter) {
      t.push_back({ConfigKey{path, description, false, shape, flag_name}, std::move(setter)});
    };
    add("manifests-dir", "Directory of manifests to watch and reconcile",
        string_setter(&DaemonConfig::manifests_dir, false));
    add("kubeconfig", "Path to the kubeconfig file", string_setter(&DaemonConfig::kubeconfig, true));
    add("context", "Kubeconfig context to use", string_setter(&DaemonConfig::context, true));
    add("resync-interval", "Full reconcile interval to correct drift (e.g. 5m; at least 1s)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.resync_interval; }, 1s));
    add("retry-interval",
        "After a reconcile with failures, reconcile everything again this long after, doubling while failures "
        "persist, up to resync-interval (e.g. 10s, at least 100ms; 0s: wait for the next resync)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.retry_interval; }, 100ms,
                        "wait for the next resync"));
    add("debounce", "Quiet time after a file event before reconciling (e.g. 20ms; at least 1ms)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.debounce; }, 1ms));
    add("prune-delay",
        "Quiet time after a file change that removed objects before they are pruned (e.g. 2s, at least 100ms; "
        "15 times this at most while files keep changing; 0s: at once)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.prune_delay; }, 100ms, "at once"));
    add("watch-drift",
        "Watch the kinds kstate manages (metadata only, its own objects) and correct an object edited or deleted "
        "through the API within about a second (false: resync-interval corrects it)",
        bool_setter([](DaemonConfig& c) -> bool& { return c.watch_drift; }), true);
    add("concurrency", "States run in parallel", int_setter(&DaemonConfig::concurrency, 1, 1024));
    add("qps", "Requests per second sent to the API server", set_qps);
    add("burst", "Request burst above qps", int_setter(&DaemonConfig::burst, 1, 100000));
    add("field-manager", "Server-side apply field manager", string_setter(&DaemonConfig::field_manager, false));
    add("applyset.name",
        "Name of the ApplySet parent Secret that records what kstate applies (the daemon's default: kstate; "
        "kstate apply needs it for --prune, and without it records and prunes nothing). Each set prunes only what "
        "it recorded, and a set another writer reconciles is refused",
        name_setter([](DaemonConfig& c) -> std::string& { return c.applyset_name; },
                    &manifests::check_dns1123_subdomain));
    add("applyset.namespace", "Namespace of the ApplySet parent Secret (default kube-system; it must exist)",
        name_setter([](DaemonConfig& c) -> std::string& { return c.applyset_namespace; },
                    &manifests::check_dns1123_label));
    add("prune", "Delete managed objects no longer in any manifest",
        bool_setter([](DaemonConfig& c) -> bool& { return c.prune; }), true);
    add("allow-empty-prune", "Allow prune when the manifest directory is empty or missing",
        bool_setter([](DaemonConfig& c) -> bool& { return c.allow_empty_prune; }), true);
    add("adopt", "Take over (label, then prune when removed) existing objects the manifests declare (default on)",
        bool_setter([](DaemonConfig& c) -> bool& { return c.adopt; }), true);
    add("adopt-objects",
        "Objects taken over even when another tool (Helm, Flux, Argo CD, another ApplySet) manages them: "
        "Kind/namespace/name, comma-separated",
        [](DaemonConfig& config, const std::string& value) -> Status {
          auto parsed = states::parse_adopt_objects(value);
          if (!parsed) {
            return bad_value(parsed.error().message);
          }
          config.adopt_objects = std::move(*parsed);
          return ok_status();
        });
    add("leader-election.enabled", "Run one active copy among several nodes (Lease)",
        bool_setter([](DaemonConfig& c) -> bool& { return c.leader_election.enabled; }), true);
    add("leader-election.lease-name", "Name of the coordination.k8s.io/v1 Lease",
        name_setter([](DaemonConfig& c) -> std::string& { return c.leader_election.lease_name; },
                    &manifests::check_dns1123_subdomain));
    add("leader-election.lease-namespace", "Namespace of the Lease",
        name_setter([](DaemonConfig& c) -> std::string& { return c.leader_election.lease_namespace; },
                    &manifests::check_dns1123_label));
    add("leader-election.lease-duration", "How long non-leaders wait before taking over (client-go: 15s)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.leader_election.lease_duration; }, 1s));
    add("leader-election.renew-deadline", "How long the leader retries renewing before giving up (10s)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.leader_election.renew_deadline; }, 100ms));
    add("leader-election.retry-period", "Interval between acquire/renew attempts (2s)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.leader_election.retry_period; }, 100ms));
    add("listen-address",
        "host:port of /healthz, /readyz and /metrics (no authentication: a non-loopback address is warned about)",
        set_listen_address);
    add("connect-timeout",
        "Deadline for connecting to the API server, TLS handshake included (default 10s; at least 100ms)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.connect_timeout; }, 100ms));
    add("request-timeout",
        "Deadline for one request to the API server, its whole answer included (default 30s; at least 1s)",
        duration_setter([](DaemonConfig& c) -> Duration& { return c.request_timeout; }, 1s));
    add("cache-dir", "Discovery cache folder", string_setter(&DaemonConfig::cache_dir, false));
    add("state-dir", "Folder for the daemon's own state", string_setter(&DaemonConfig::state_dir, false));
    add("log.level", "Log level: trace, debug, info, warn, error, off, or kubectl's -v numbers 0-10 (6: each request)",
        set_log_level);
    add("log.format",
        "Log format: text (journal when stderr is the journal), journal (<N> priority prefixes, no time) or json "
        "(one object per line, with state, kind, namespace, name, action, file, line, duration_ms)",
        set_log_format);
    add("state-output",
        "How much of each state a run shows (kstate apply -o text) or logs (the daemon): concise (what changed or "
        "failed, one line each; kstate test: with its diff), terse (every state one line), mixed (failures in "
        "full), changes (changes and failures in full) or full (every state, Salt's blocks); Secret values masked",
        set_state_output);
    add("check-manifest-permissions", "Refuse manifests writable by group or others",
        bool_setter([](DaemonConfig& c) -> bool& { return c.check_manifest_permissions; }), true);
    add_collection("vars", "var", ConfigKey::Shape::mapping,
                   "Variables for ${NAME} in manifests (NAME: value; flag: NAME=VALUE, repeatable); win over vars-from",
                   add_variable);
    add_collection(
        "vars-from", "vars-from", ConfigKey::Shape::list,
        "YAML files of NAME: value variables, a later one winning (repeatable); the daemon reads them at every full "
        "reconcile",
        add_variables_file);
    add_collection("ignore-fields", "ignore-fields", ConfigKey::Shape::list,
                   "Fields left to other writers once an object exists, as KIND[.GROUP][/NAME | /NAMESPACE/NAME]="
                   "/json/pointer,... (repeatable), e.g. Deployment.apps=/spec/replicas",
                   add_ignore_fields_rule);
    return t;
  }();
  return table;
}

const KeyEntry* find_key(std::string_view path) {
  for (const auto& entry : key_table()) {
    if (entry.key.path == path) {
      return &entry;
    }
  }
  return nullptr;
}

// " (did you mean \"resync-interval\"?)" for a mistyped key, or "".
std::string suggested_key(std::string_view path) {
  std::vector<std::string_view> paths;
  for (const auto& entry : key_table()) {
    paths.push_back(entry.key.path);
  }
  const std::string match = manifests::closest_match(path, paths);
  return match.empty() ? std::string() : " (did you mean \"" + match + "\"?)";
}

bool is_section(std::string_view path) {
  const std::string prefix = std::string(path) + ".";
  return std::any_of(key_table().begin(), key_table().end(),
                     [&](const KeyEntry& e) { return e.key.path.starts_with(prefix); });
}

std::string location(std::string_view source, const YAML::Node& node) {
  std::string where(source);
  if (node.Mark().line >= 0) {
    where += ":" + std::to_string(node.Mark().line + 1);
  }
  return where;
}

Error located(std::string_view where, std::string_view key, const Error& cause) {
  return Error(ErrorKind::invalid_input, std::string(where) + ": " + std::string(key) + ": " + cause.message);
}

// A mapping or list key: its setter is given each entry ("NAME=VALUE" or the item).
Status parse_collection(const KeyEntry& entry, const YAML::Node& value, const std::string& path,
                        std::string_view source, DaemonConfig& config) {
  if (value.IsNull()) {
    return ok_status();
  }
  const bool mapping = entry.key.shape == ConfigKey::Shape::mapping;
  if (mapping ? !value.IsMap() : !value.IsSequence()) {
    return Error(ErrorKind::invalid_input, location(source, value) + ": " + path + ": expected a " +
                                               (mapping ? "mapping of NAME: value" : "list"));
  }
  for (const auto& item : value) {
    const YAML::Node& single = mapping ? item.second : item;
    if (!single.IsScalar()) {
      return Error(ErrorKind::invalid_input, location(source, single) + ": " + path + ": expected a single value");
    }
    const std::string text = mapping ? item.first.Scalar() + "=" + single.Scalar() : single.Scalar();
    if (auto status = entry.setter(config, text); !status) {
      return located(location(source, mapping ? item.first : single), path, status.error());
    }
  }
  return ok_status();
}

Status parse_map(const YAML::Node& map, const std::string& prefix, std::string_view source, DaemonConfig& config) {
  for (const auto& item : map) {
    const std::string name = item.first.Scalar();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    const YAML::Node& value = item.second;
    if (is_section(path)) {
      if (value.IsNull()) {
        continue;
      }
      if (!value.IsMap()) {
        return Error(ErrorKind::invalid_input, location(source, value) + ": " + path + ": expected a mapping");
      }
      if (auto status = parse_map(value, path, source, config); !status) {
        return status;
      }
      continue;
    }
    const KeyEntry* entry = find_key(path);
    if (entry == nullptr) {
      return Error(ErrorKind::invalid_input,
                   location(source, item.first) + ": " + path + ": unknown key" + suggested_key(path));
    }
    if (entry->key.shape != ConfigKey::Shape::value) {
      if (auto status = parse_collection(*entry, value, path, source, config); !status) {
        return status;
      }
      continue;
    }
    if (!value.IsScalar() && !value.IsNull()) {
      return Error(ErrorKind::invalid_input, location(source, value) + ": " + path + ": expected a single value");
    }
    const std::string text = value.IsNull() ? std::string() : value.Scalar();
    if (auto status = entry->setter(config, text); !status) {
      return located(location(source, value), path, status.error());
    }
  }
  return ok_status();
}

}  // namespace

std::string ConfigKey::flag() const {
  std::string out = "--" + std::string(flag_name.empty() ? path : flag_name);
  std::replace(out.begin(), out.end(), '.', '-');
  return out;
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> k;
    for (const auto& entry : key_table()) {
      k.push_back(entry.key);
    }
    return k;
  }();
  return keys;
}

const ConfigKey* find_config_key(std::string_view path) {
  const KeyEntry* entry = find_key(path);
  return entry == nullptr ? nullptr : &entry->key;
}

std::optional<std::string> config_value_problem(std::string_view path, const std::string& value) {
  const KeyEntry* entry = find_key(path);
  if (entry == nullptr) {
    return "unknown key " + std::string(path);
  }
  DaemonConfig scratch;
  if (Status set = entry->setter(scratch, value); !set.ok()) {
    return set.error().message;
  }
  return std::nullopt;
}

std::string_view to_string(LogFormat format) {
  switch (format) {
    case LogFormat::journal:
      return "journal";
    case LogFormat::json:
      return "json";
    default:
      return "text";
  }
}

Result<HostPort> parse_host_port(std::string_view address) {
  HostPort out;
  std::string_view port_text;
  if (address.starts_with("[")) {
    const auto close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return bad_value("expected [host]:port, got \"" + std::string(address) + "\"");
    }
    out.host = std::string(address.substr(1, close - 1));
    port_text = address.substr(close + 2);
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos || address.find(':') != colon) {
      return bad_value("expected host:port, got \"" + std::string(address) + "\"");
    }
    out.host = std::string(address.substr(0, colon));
    port_text = address.substr(colon + 1);
  }
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (out.host.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535) {
    return bad_value("expected host:port with a port from 0 to 65535, got \"" + std::string(address) + "\"");
  }
  out.port = static_cast<unsigned short>(port);
  return out;
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") {
    return true;
  }
  boost::system::error_code error;
  const auto address = boost::asio::ip::make_address(std::string(host), error);
  return !error && address.is_loopback();
}

Result<DaemonConfig> parse_config(std::string_view yaml_text, std::string_view source, DaemonConfig base) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Error(ErrorKind::invalid_input,
                 std::string(source) + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (root.IsNull()) {
    return base;
  }
  if (!root.IsMap()) {
    return Error(ErrorKind::invalid_input, location(source, root) + ": expected a mapping of config keys");
  }
  if (auto status = parse_map(root, "", source, base); !status) {
    return status.error();
  }
  if (auto status = validate(base); !status) {
    return Error(ErrorKind::invalid_input, std::string(source) + ": " + status.error().message);
  }
  return base;
}

Result<DaemonConfig> apply_overrides(DaemonConfig config, const std::vector<ConfigOverride>& overrides) {
  for (const auto& override_value : overrides) {
    const KeyEntry* entry = find_key(override_value.key);
    if (entry == nullptr) {
      return Error(ErrorKind::invalid_input, "unknown config key \"" + override_value.key + "\"");
    }
    if (auto status = entry->setter(config, override_value.value); !status) {
      return Error(ErrorKind::invalid_input, entry->key.flag() + ": " + status.error().message);
    }
  }
  if (auto status = validate(config); !status) {
    return status.error();
  }
  return config;
}

Status validate(const DaemonConfig& config) {
  const auto& election = config.leader_election;
  // The same invariants client-go's NewLeaderElector enforces.
  if (election.lease_duration <= election.renew_deadline) {
    return bad_value("leader-election.lease-duration (" + format_duration(election.lease_duration) +
                     ") must be greater than leader-election.renew-deadline (" +
                     format_duration(election.renew_deadline) + ")");
  }
  if (election.renew_deadline * 10 <= election.retry_period * 12) {
    return bad_value("leader-election.renew-deadline (" + format_duration(election.renew_deadline) +
                     ") must be greater than 1.2 x leader-election.retry-period (" +
                     format_duration(election.retry_period) + ")");
  }
  return ok_status();
}

Result<DaemonConfig> load_config(const std::string& path, bool required, const std::vector<ConfigOverride>& overrides) {
  DaemonConfig config;
  std::ifstream file(path, std::ios::binary);
  if (file) {
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) {
      return Error(ErrorKind::io, path + ": cannot read the config file");
    }
    auto parsed = parse_config(text.str(), path);
    if (!parsed) {
      return parsed;
    }
    config = std::move(*parsed);
  } else if (required) {
    return Error(ErrorKind::config, path + ": cannot open the config file: " + std::generic_category().message(errno));
  }
  return apply_overrides(std::move(config), overrides);
}

}  // namespace kstate::daemon
