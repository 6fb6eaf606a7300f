// /metrics text: exact exposition lines for each metric type, label escaping, and the
// daemon's full metric set accepted by `promtool check metrics` (when installed).
#include "daemon/metrics.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace metrics_test {

using kstate::daemon::DaemonMetrics;
using kstate::daemon::MetricsRegistry;

namespace {

bool contains_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

struct CommandResult {
  int status;
  std::string output;
};

CommandResult run_with_stdin(const std::string& command, const std::string& input) {
  const auto input_path = std::filesystem::temp_directory_path() / ("kstate-metrics-" + std::to_string(::getpid()));
  std::ofstream(input_path) << input;
  std::string output;
  FILE* pipe = ::popen((command + " < '" + input_path.string() + "' 2>&1").c_str(), "r");
  char buffer[512];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    output += buffer;
  }
  const int status = pipe == nullptr ? -1 : ::pclose(pipe);
  std::filesystem::remove(input_path);
  return {status, output};
}

}  // namespace

TEST_CASE("counters and gauges render with HELP, TYPE and labels") {
  MetricsRegistry registry;
  auto& requests = registry.counter("kstate_api_requests_total", "API requests", {"verb", "code"});
  auto& objects = registry.gauge("kstate_managed_objects", "Managed objects");
  requests.add({"PATCH", "200"});
  requests.add({"PATCH", "200"}, 2);
  requests.add({"GET", "404"});
  objects.set({}, 42);
  const std::string text = registry.render();
  CHECK(contains_line(text, "# HELP kstate_api_requests_total API requests"));
  CHECK(contains_line(text, "# TYPE kstate_api_requests_total counter"));
  CHECK(contains_line(text, "kstate_api_requests_total{verb=\"PATCH\",code=\"200\"} 3"));
  CHECK(contains_line(text, "kstate_api_requests_total{verb=\"GET\",code=\"404\"} 1"));
  CHECK(contains_line(text, "# TYPE kstate_managed_objects gauge"));
  CHECK(contains_line(text, "kstate_managed_objects 42"));
  CHECK(requests.value({"PATCH", "200"}) == 3);
  CHECK_THROWS(requests.add({"PATCH"}));           // wrong label count
  CHECK_THROWS(requests.add({"GET", "200"}, -1));  // counters never go down
}

TEST_CASE("histograms render cumulative buckets, +Inf, sum and count") {
  MetricsRegistry registry;
  auto& duration = registry.histogram("kstate_reconcile_duration_seconds", "Duration", {0.1, 1, 10}, {"kind"});
  duration.observe({"full"}, 0.05);
  duration.observe({"full"}, 0.5);
  duration.observe({"full"}, 0.7);
  duration.observe({"full"}, 30);
  const std::string text = registry.render();
  CHECK(contains_line(text, "kstate_reconcile_duration_seconds_bucket{kind=\"full\",le=\"0.1\"} 1"));
  CHECK(contains_line(text, "kstate_reconcile_duration_seconds_bucket{kind=\"full\",le=\"1\"} 3"));
  CHECK(contains_line(text, "kstate_reconcile_duration_seconds_bucket{kind=\"full\",le=\"10\"} 3"));
  CHECK(contains_line(text, "kstate_reconcile_duration_seconds_bucket{kind=\"full\",le=\"+Inf\"} 4"));
  CHECK(contains_line(text, "kstate_reconcile_duration_seconds_sum{kind=\"full\"} 31.25"));
  CHECK(contains_line(text, "kstate_reconcile_duration_seconds_count{kind=\"full\"} 4"));
  CHECK(duration.count({"full"}) == 4);
}

TEST_CASE("label values are escaped") {
  CHECK(kstate::daemon::escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  MetricsRegistry registry;
  registry.counter("kstate_test_total", "help with \\ and\nnewline", {"path"}).add({"dir/\"odd\".yaml"});
  const std::string text = registry.render();
  CHECK(contains_line(text, "# HELP kstate_test_total help with \\\\ and\\nnewline"));
  CHECK(contains_line(text, "kstate_test_total{path=\"dir/\\\"odd\\\".yaml\"} 1"));
}

TEST_CASE("the daemon's metrics pass promtool check metrics") {
  if (!std::filesystem::exists("/usr/bin/promtool")) {
    WARN("promtool not installed: skipped");
    return;
  }
  MetricsRegistry registry;
  DaemonMetrics metrics(registry);
  metrics.reconciles.add({"full", "success"});
  metrics.reconciles.add({"files", "failure"});
  metrics.reconcile_duration.observe({"full"}, 1.3);
  metrics.state_results.add({"created"}, 3);
  metrics.state_results.add({"unchanged"}, 9);
  metrics.managed_objects.set({}, 12);
  metrics.api_requests.add({"PATCH", "200"}, 3);
  metrics.api_retries.add({});
  metrics.discovery_cache_hits.add({});
  metrics.inotify_overflows.add({});
  metrics.last_success_timestamp.set({}, 1763719200);
  metrics.leader.set({}, 1);
  const std::string text = registry.render();
  for (const char* name :
       {"kstate_reconciles_total", "kstate_reconcile_duration_seconds", "kstate_state_results_total",
        "kstate_managed_objects", "kstate_api_requests_total", "kstate_api_retries_total",
        "kstate_discovery_cache_hits_total", "kstate_discovery_cache_misses_total", "kstate_inotify_overflows_total",
        "kstate_last_successful_reconcile_timestamp_seconds", "kstate_leader", "kstate_ready"}) {
    INFO(name);
    CHECK(contains_line(
        text, std::string("# TYPE ") + name +
                  (std::string(name).ends_with("_total") ? " counter"
                   : std::string(name).ends_with("_seconds") && std::string(name).find("duration") != std::string::npos
                       ? " histogram"
                       : " gauge")));
  }
  auto checked = run_with_stdin("/usr/bin/promtool check metrics", text);
  INFO(checked.output);
  CHECK(checked.status == 0);

  // The check is real: a broken exposition is refused.
  auto broken = run_with_stdin("/usr/bin/promtool check metrics", "# TYPE x counter\nx{a=\"1\" 2\n");
  CHECK(broken.status != 0);
}

}  // namespace metrics_test
