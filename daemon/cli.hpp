// The command line of DESIGN.md ("Command line"): subcommands, common flags and exit
// codes, with kubectl's habits (-f/--filename and `-` for stdin, -n/--namespace,
// `kstate diff`, --version, -v numbers, "did you mean" for a mistyped subcommand).
// Parsing is separated from running so tests can check the contract without starting
// anything; the same definition (command_line()) generates the shell completions and
// the man page (cli_docs.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "daemon/config.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kstate::cli {

// Exit codes shared by every subcommand (DESIGN.md): `test` uses 1 for pending changes.
inline constexpr int exit_ok = 0;
inline constexpr int exit_changes_pending = 1;
inline constexpr int exit_failed = 2;

// Flags common to the subcommands. Empty/unset values mean "use the default or config".
struct CommonOptions {
  std::string kubeconfig;
  std::string context;
  // apply / test, -n/--namespace: the namespace of namespaced objects that name none
  // (empty: the kubeconfig context's, as kubectl); an object naming another one is an
  // error, as with kubectl.
  std::string namespace_name;
  std::string output = "text";  // text | json | junit
  // apply / test, --state-output: how much of each state -o text shows (states/report.hpp)
  std::string state_output = "concise";
  int concurrency = 16;
  double qps = 500.0;
  // One cycle's worth at full speed: a cold apply of 1,000 objects is ~1,100 requests.
  int burst = 2000;
  std::string field_manager = "kstate";
  std::optional<bool> prune;  // --prune / --no-prune
  bool allow_empty_prune = false;
  bool adopt = true;  // --adopt / --no-adopt: take over existing objects the manifests declare
  // --adopt-objects: taken over even when another tool manages them (states/adoption.hpp)
  std::set<std::string> adopt_objects;
  // apply / test: the ApplySet parent Secret. Empty: none, so the run records no
  // membership and cannot prune (--prune requires it, as kubectl's --applyset): a
  // one-shot run never writes into a set, the daemon's above all, unless named.
  std::string applyset_name;
  std::string applyset_namespace = "kube-system";
  std::string cache_dir;
  std::string log_level = "info";
  // --connect-timeout: TCP connect and TLS handshake with the API server;
  // --request-timeout: one request, its whole answer included.
  kstate::daemon::Duration connect_timeout = std::chrono::seconds(10);
  kstate::daemon::Duration request_timeout = std::chrono::seconds(30);
};

// `kstate inventory`: what to read and what to keep.
struct InventoryOptions {
  std::string namespace_name;        // -n/--namespace; empty: the kubeconfig context's namespace
  bool all_namespaces = false;       // -A/--all-namespaces
  std::vector<std::string> digests;  // --digest, each sha256:<hex> or repo@sha256:<hex>
  std::string image;                 // --image REPO
  std::int64_t chunk_size = 500;     // --chunk-size: items per LIST page, as kubectl's
};

struct Invocation {
  std::string subcommand;  // apply | test (also as `diff`) | daemon | discover | inventory | version | ...
  CommonOptions common;
  // apply / test: positional paths, then -f/--filename values; "-" is stdin.
  std::vector<std::string> paths;
  std::vector<std::string> filenames;  // -f/--filename while parsing (run() appends them to paths)
  std::string config_file;             // daemon
  std::vector<kstate::daemon::ConfigOverride> config_overrides;  // daemon: one flag per config key
  bool refresh = false;                                          // discover
  InventoryOptions inventory;                                    // inventory
  std::string shell;                                             // completion: bash | zsh | fish
};

// The command line as defined (the CLI11 App), with what it does not record itself:
// the values an option takes, for completions and the man page.
enum class ValueKind { none, file, directory, choice, other };
struct OptionValues {
  ValueKind kind = ValueKind::other;
  std::vector<std::string> choices;  // ValueKind::choice
  std::string placeholder;           // what the value is called in help and the man page (DURATION)
};
struct CommandLine {
  std::unique_ptr<CLI::App> app;
  std::map<const CLI::Option*, OptionValues> values;  // options that take a value
  CommandLine();
  ~CommandLine();
  CommandLine(CommandLine&&) noexcept;
  CommandLine& operator=(CommandLine&&) noexcept;
};
// kstate's subcommands and flags, bound to `invocation` (which parsing fills in).
CommandLine command_line(Invocation& invocation);

// A subcommand implementation: returns the process exit code.
using Handler = std::function<int(const Invocation&, std::ostream& out, std::ostream& err)>;

// Parses argv and runs the matching handler. Subcommands without a handler exit 2
// with "not implemented yet". Usage errors exit 2 with one line on `err`.
int run(int argc, const char* const* argv, const std::map<std::string, Handler>& handlers, std::ostream& out,
        std::ostream& err);

// `kstate version`: version, commit and library versions.
int print_version(const Invocation&, std::ostream& out, std::ostream& err);

// The handlers kstate ships with. `whole_process`: main's, where a command may end
// the process itself once its output is written (see run_apply_command).
std::map<std::string, Handler> default_handlers(bool whole_process = false);

}  // namespace kstate::cli
