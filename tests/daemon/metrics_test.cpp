// /metrics text: exact exposition lines for each metric type, label escaping, and the
// daemon's full metric set accepted by `promtool check metrics` (when installed).
#include "daemon/metrics.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>

#include "daemon/process_sample.hpp"
#include "kstate/build_info.hpp"

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
  metrics.api_request_failures.add({"GET", "connect"}, 2);
  metrics.api_retries.add({});
  metrics.discovery_cache_hits.add({});
  metrics.inotify_overflows.add({});
  metrics.last_success_timestamp.set({}, 1763719200);
  metrics.leader.set({}, 1);
  const std::string text = registry.render();
  for (const char* name : {"kstate_reconciles_total", "kstate_reconcile_duration_seconds", "kstate_state_results_total",
                           "kstate_managed_objects", "kstate_api_requests_total", "kstate_api_retries_total",
                           "kstate_discovery_cache_hits_total", "kstate_discovery_cache_misses_total",
                           "kstate_inotify_overflows_total", "kstate_last_successful_reconcile_timestamp_seconds",
                           "kstate_leader", "kstate_ready", "kstate_api_request_failures_total", "kstate_build_info",
                           "process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds_total"}) {
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

TEST_CASE("kstate_build_info names the version and commit; process_* describe this process") {
  // Some CPU time first: /proc counts it in 10 ms ticks.
  const std::clock_t cpu_start = std::clock();
  while (std::clock() - cpu_start < CLOCKS_PER_SEC / 20) {
  }
  MetricsRegistry registry;
  DaemonMetrics metrics(registry);
  const std::string text = registry.render();
  CHECK(contains_line(text, std::string("kstate_build_info{version=\"") + kstate::build_info::version + "\",commit=\"" +
                                kstate::build_info::git_commit + "\"} 1"));
  auto value_of = [&text](const std::string& name) {
    std::smatch match;
    REQUIRE(std::regex_search(text, match, std::regex("\n" + name + " ([0-9.e+]+)\n")));
    return std::stod(match[1].str());
  };
  CHECK(value_of("process_resident_memory_bytes") > 1e6);
  CHECK(value_of("process_open_fds") >= 3);  // stdin, stdout, stderr at least
  const double now = static_cast<double>(std::time(nullptr));
  const double started = value_of("process_start_time_seconds");
  CHECK(started <= now + 1);
  CHECK(started > now - 3600);  // this test binary started less than an hour ago
  CHECK(value_of("process_cpu_seconds_total") > 0);
  // A later scrape's CPU time does not go down.
  const double cpu = metrics.process_cpu.value();
  metrics.sample_process();
  CHECK(metrics.process_cpu.value() >= cpu);
  CHECK_THROWS(metrics.process_cpu.set({}, cpu - 1));  // a counter set lower is a bug
}

TEST_CASE("a /proc/PID/stat line is read by field number, whatever the command name holds") {
  // comm with a space and a parenthesis; utime 250, stime 50, starttime 123400, rss 5000 pages.
  const std::string stat =
      "4242 (kstate (x) d) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 3 0 123400 123456789 5000 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  auto parsed = kstate::daemon::parse_process_stat(stat, 100, 4096);
  REQUIRE(parsed);
  CHECK(parsed->cpu_seconds == 3.0);
  CHECK(parsed->start_seconds_after_boot == 1234.0);
  CHECK(parsed->resident_memory_bytes == 5000.0 * 4096);
  CHECK_FALSE(kstate::daemon::parse_process_stat("4242 (kstate) S 1 2", 100, 4096));
  CHECK_FALSE(kstate::daemon::parse_process_stat("garbage", 100, 4096));
}

}  // namespace metrics_test
