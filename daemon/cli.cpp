// CLI11-based parsing of kstate's subcommands and common flags, and dispatch to the
// subcommand handlers. Keeps the contract of DESIGN.md: usage errors exit 2 with one
// clear line on stderr.
#include "daemon/cli.hpp"

#include <openssl/opensslv.h>
#include <rapidjson/rapidjson.h>
#include <spdlog/version.h>

#include <CLI/CLI.hpp>
#include <boost/version.hpp>
#include <sstream>

#include "daemon/apply_command.hpp"
#include "daemon/config_flags.hpp"
#include "daemon/daemon_command.hpp"
#include "daemon/discover_command.hpp"
#include "daemon/inventory_command.hpp"
#include "daemon/states_reconciler.hpp"
#include "kstate/build_info.hpp"
#include "manifests/object_validation.hpp"
#include "states/adoption.hpp"

namespace kstate::cli {
namespace {

// A Go-style duration flag (core/duration.hpp) of at least `minimum`.
void add_duration_option(CLI::App& app, const std::string& name, kstate::Duration& value, kstate::Duration minimum,
                         const std::string& description) {
  app.add_option_function<std::string>(
         name, [&value](const std::string& text) { value = kstate::parse_duration(text).value(); }, description)
      ->check(CLI::Validator(
          [minimum](std::string& text) -> std::string {
            auto parsed = kstate::parse_duration(text);
            if (!parsed) {
              return parsed.error().message;
            }
            return *parsed < minimum ? "must be at least " + kstate::format_duration(minimum) : "";
          },
          "DURATION"));
}

// Where the server is and how fast to talk to it.
void add_connection_flags(CLI::App& app, CommonOptions& common) {
  app.add_option("--kubeconfig", common.kubeconfig, "Path to the kubeconfig file");
  app.add_option("--context", common.context, "Kubeconfig context to use");
  add_duration_option(app, "--connect-timeout", common.connect_timeout, std::chrono::milliseconds(100),
                      "Deadline for connecting to the API server, TLS handshake included (default 10s)");
  add_duration_option(app, "--request-timeout", common.request_timeout, std::chrono::seconds(1),
                      "Deadline for one request to the API server, its whole answer included (default 30s)");
}
void add_rate_flags(CLI::App& app, CommonOptions& common) {
  app.add_option("--qps", common.qps, "Requests per second sent to the API server")->check(CLI::PositiveNumber);
  app.add_option("--burst", common.burst, "Request burst above --qps")->check(CLI::Range(1, 100000));
}
void add_log_level_flag(CLI::App& app, CommonOptions& common) {
  app.add_option("-v,--log-level", common.log_level, "Log level: trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
}

void add_common_flags(CLI::App& app, CommonOptions& common) {
  add_connection_flags(app, common);
  app.add_option("-o,--output", common.output, "Output format: text, json or junit")
      ->check(CLI::IsMember({"text", "json", "junit"}));
  app.add_option("--concurrency", common.concurrency, "States run in parallel")->check(CLI::Range(1, 1024));
  add_rate_flags(app, common);
  app.add_option("--field-manager", common.field_manager, "Server-side apply field manager");
  app.add_flag("--prune,!--no-prune", common.prune, "Delete managed objects no longer in any manifest");
  app.add_flag("--allow-empty-prune", common.allow_empty_prune,
               "Allow prune when the manifest directory is empty or missing");
  app.add_flag("--adopt,!--no-adopt", common.adopt,
               "Take over (label, and later prune) existing objects the manifests declare (default on)");
  app.add_option_function<std::vector<std::string>>(
         "--adopt-objects",
         [&common](const std::vector<std::string>& values) {
           for (const std::string& value : values) {  // (the flag may be repeated)
             auto parsed = states::parse_adopt_objects(value);
             if (!parsed) {
               throw CLI::ValidationError("--adopt-objects", parsed.error().message);
             }
             common.adopt_objects.insert(parsed->begin(), parsed->end());
           }
         },
         "Objects taken over even when another tool (Helm, Flux, Argo CD, another ApplySet) manages them: "
         "Kind/namespace/name, comma-separated")
      ->allow_extra_args(false);  // one value per flag: a path after it stays a path
  app.add_option("--cache-dir", common.cache_dir, "Discovery cache folder");
  add_log_level_flag(app, common);
}

// inventory: only what a read-only listing uses (no prune, concurrency or field manager).
void add_inventory_flags(CLI::App& app, Invocation& invocation) {
  auto& options = invocation.inventory;
  add_connection_flags(app, invocation.common);
  app.add_option("-o,--output", invocation.common.output, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  auto* ns = app.add_option("-n,--namespace", options.namespace_name,
                            "Pods of this namespace (default: the kubeconfig context's namespace)");
  app.add_flag("-A,--all-namespaces", options.all_namespaces, "Pods of every namespace")->excludes(ns);
  app.add_option("--digest", options.digests,
                 "Where these builds run: sha256:<hex>, or a RepoDigests entry REPO@sha256:<hex> (repeatable; "
                 "exit 1 when one runs nowhere)");
  app.add_option("--image", options.image, "Only this image repository (e.g. registry.example.com/team/app)");
  app.add_option("--chunk-size", options.chunk_size, "Items per LIST page")->check(CLI::Range(1, 100000));
  add_rate_flags(app, invocation.common);
  add_log_level_flag(app, invocation.common);
}

// apply / test: which ApplySet the run manages. Its parent Secret records what the set
// owns; prune deletes only what that set recorded, so folders applied with different
// names never prune each other's objects (kubectl's --applyset).
void add_applyset_flags(CLI::App& app, CommonOptions& common) {
  auto check_with = [](std::string (*check)(std::string_view)) {
    return CLI::Validator([check](std::string& value) { return check(value); }, "NAME");
  };
  app.add_option("--applyset-name", common.applyset_name,
                 "Name of the ApplySet parent Secret that records what this run applies (needed by --prune); "
                 "without it nothing is recorded and nothing pruned. Each set prunes only what it recorded, and a "
                 "set a kstate daemon reconciles is refused")
      ->check(check_with(&manifests::check_dns1123_subdomain));
  app.add_option("--applyset-namespace", common.applyset_namespace,
                 "Namespace of the ApplySet parent Secret (default kube-system; it must exist)")
      ->check(check_with(&manifests::check_dns1123_label));
}

}  // namespace

int print_version(const Invocation& /*invocation*/, std::ostream& out, std::ostream& /*err*/) {
  out << "kstate " << build_info::version << "\n"
      << "commit: " << build_info::git_commit << "\n"
      << "build: " << build_info::build_type << ", " << build_info::compiler << "\n"
      << "libraries:\n"
      << "  boost " << BOOST_VERSION / 100000 << "." << BOOST_VERSION / 100 % 1000 << "." << BOOST_VERSION % 100 << "\n"
      << "  openssl " << OPENSSL_VERSION_STR << "\n"
      << "  rapidjson " << RAPIDJSON_VERSION_STRING << "\n"
      << "  yaml-cpp " << build_info::yaml_cpp_version << "\n"
      << "  spdlog " << SPDLOG_VER_MAJOR << "." << SPDLOG_VER_MINOR << "." << SPDLOG_VER_PATCH << "\n"
      << "  cli11 " << CLI11_VERSION << "\n"
      << "  dtl " << build_info::dtl_version << "\n";
  return exit_ok;
}

int run(int argc, const char* const* argv, const std::map<std::string, Handler>& handlers, std::ostream& out,
        std::ostream& err) {
  CLI::App app{"kstate keeps a Kubernetes cluster in the state a directory of manifests describes.", "kstate"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  Invocation invocation;

  auto* apply = app.add_subcommand("apply", "One reconcile of files/directories, then exit");
  apply->add_option("paths", invocation.paths, "Manifest files or directories");
  add_common_flags(*apply, invocation.common);
  add_applyset_flags(*apply, invocation.common);

  auto* test = app.add_subcommand("test", "Same as apply, but every write is dryRun=All; prints diffs");
  test->add_option("paths", invocation.paths, "Manifest files or directories");
  add_common_flags(*test, invocation.common);
  add_applyset_flags(*test, invocation.common);

  auto* daemon = app.add_subcommand("daemon", "Long-running reconciler of a watched directory");
  daemon->add_option("--config", invocation.config_file, "Config file (default /etc/kstate/config.yaml)");
  kstate::daemon::add_config_flags(*daemon, invocation.config_overrides);

  auto* discover = app.add_subcommand("discover", "List the resources the server offers");
  discover->add_flag("--refresh", invocation.refresh, "Ignore the discovery cache");
  add_common_flags(*discover, invocation.common);
  discover->get_option("--output")->check(CLI::IsMember({"text", "json"}));

  auto* inventory =
      app.add_subcommand("inventory", "Nodes, and where each image digest runs (for matching builds by digest)");
  add_inventory_flags(*inventory, invocation);

  app.add_subcommand("version", "Print version, commit and library versions");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return exit_ok;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return exit_ok;
  } catch (const CLI::ParseError& e) {
    // One clear line: CLI11's message, then where to look.
    std::string what = e.what();
    if (what.empty()) {
      what = "invalid command line";
    }
    err << "kstate: " << what << " (see kstate --help)\n";
    return exit_failed;
  }

  for (auto* sub : app.get_subcommands()) {
    invocation.subcommand = sub->get_name();
  }
  if ((invocation.subcommand == "apply" || invocation.subcommand == "test") &&
      invocation.common.prune.value_or(false) && invocation.common.applyset_name.empty()) {
    // As kubectl's --prune needs --applyset: prune deletes what one named set recorded.
    err << "kstate " << invocation.subcommand
        << ": --prune requires --applyset-name (the ApplySet whose recorded objects may be pruned; see "
           "docs/ownership.md)\n";
    return exit_failed;
  }
  auto it = handlers.find(invocation.subcommand);
  if (it == handlers.end() || !it->second) {
    err << "kstate " << invocation.subcommand << ": not implemented yet\n";
    return exit_failed;
  }
  return it->second(invocation, out, err);
}

std::map<std::string, Handler> default_handlers(bool whole_process) {
  return {
      {"version", print_version},
      {"discover", daemon::run_discover_command},
      {"inventory", daemon::run_inventory_command},
      {"apply",
       [whole_process](const Invocation& invocation, std::ostream& out, std::ostream& err) {
         return daemon::run_apply_command(invocation, out, err, false, whole_process);
       }},
      {"test",
       [whole_process](const Invocation& invocation, std::ostream& out, std::ostream& err) {
         return daemon::run_apply_command(invocation, out, err, true, whole_process);
       }},
      {"daemon",
       [](const Invocation& invocation, std::ostream&, std::ostream& err) {
         daemon::DaemonCommand command;
         command.config_path = invocation.config_file;
         command.overrides = invocation.config_overrides;
         return daemon::run_daemon_command(command, daemon::make_states_reconciler, err);
       }},
  };
}

}  // namespace kstate::cli
