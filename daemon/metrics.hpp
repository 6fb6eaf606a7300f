// A small Prometheus metrics registry: counter, gauge and histogram families with
// labels, rendered in the text exposition format (version 0.0.4) for /metrics. Written
// here because no Debian-packaged C++ Prometheus client exists; it is kept minimal.
// Thread-safe: the client's threads may count requests while /metrics renders.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kstate::daemon {

using LabelValues = std::vector<std::string>;

class MetricFamily {
 public:
  enum class Type { counter, gauge, histogram };
  MetricFamily(std::mutex& mutex, std::string name, std::string help, Type type, std::vector<std::string> label_names,
               std::vector<double> buckets = {});

  // Counters: add a non-negative amount. Gauges: add any amount.
  void add(const LabelValues& labels, double amount = 1.0);
  // Gauges: any value. Counters mirrored from elsewhere (process_cpu_seconds_total):
  // a value not below the current one.
  void set(const LabelValues& labels, double value);
  // Histograms only.
  void observe(const LabelValues& labels, double value);
  // Current value of a counter or gauge series (0 when never touched); tests and STATUS use it.
  double value(const LabelValues& labels = {}) const;
  // Number of observations of a histogram series.
  std::uint64_t count(const LabelValues& labels = {}) const;

  const std::string& name() const { return name_; }
  void render(std::string& out) const;

 private:
  struct Series {
    double value = 0;                    // counter/gauge value, histogram sum
    std::vector<std::uint64_t> buckets;  // histogram: per-bucket (not cumulative) counts
    std::uint64_t count = 0;
  };
  Series& series(const LabelValues& labels);

  std::mutex& mutex_;
  std::string name_;
  std::string help_;
  Type type_;
  std::vector<std::string> label_names_;
  std::vector<double> bucket_bounds_;
  std::map<LabelValues, Series> series_;
};

class MetricsRegistry {
 public:
  MetricFamily& counter(std::string name, std::string help, std::vector<std::string> label_names = {});
  MetricFamily& gauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  MetricFamily& histogram(std::string name, std::string help, std::vector<double> buckets,
                          std::vector<std::string> label_names = {});
  // The whole registry in the Prometheus text format.
  std::string render() const;

 private:
  MetricFamily& add(std::unique_ptr<MetricFamily> family);
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

// The metrics kstate exports (names are the /metrics contract, see README).
struct DaemonMetrics {
  explicit DaemonMetrics(MetricsRegistry& registry);
  MetricFamily& reconciles;                // kstate_reconciles_total{kind,result}
  MetricFamily& reconcile_duration;        // kstate_reconcile_duration_seconds{kind}
  MetricFamily& state_results;             // kstate_state_results_total{result}
  MetricFamily& managed_objects;           // kstate_managed_objects
  MetricFamily& api_requests;              // kstate_api_requests_total{verb,code}: answered requests
  MetricFamily& api_request_failures;      // kstate_api_request_failures_total{verb,failure}: no answer
  MetricFamily& api_retries;               // kstate_api_retries_total
  MetricFamily& discovery_cache_hits;      // kstate_discovery_cache_hits_total
  MetricFamily& discovery_cache_misses;    // kstate_discovery_cache_misses_total
  MetricFamily& inotify_overflows;         // kstate_inotify_overflows_total
  MetricFamily& last_success_timestamp;    // kstate_last_successful_reconcile_timestamp_seconds
  MetricFamily& leader;                    // kstate_leader
  MetricFamily& ready;                     // kstate_ready
  MetricFamily& applyset_writer_conflict;  // kstate_applyset_writer_conflict
  MetricFamily& build_info;                // kstate_build_info{version,commit} 1
  // Prometheus' standard process metrics, sampled when /metrics is scraped.
  MetricFamily& process_resident_memory;  // process_resident_memory_bytes
  MetricFamily& process_open_fds;         // process_open_fds
  MetricFamily& process_start_time;       // process_start_time_seconds
  MetricFamily& process_cpu;              // process_cpu_seconds_total
  MetricFamily& drift_corrections;        // kstate_drift_corrections_total{reason}
  MetricFamily& drift_fights;             // kstate_drift_fights_total{manager}
  MetricFamily& drift_watches;            // kstate_drift_watches{state}

  // Reads the process_* values now (from /proc/self).
  void sample_process();
};

// Prometheus label value escaping (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);

}  // namespace kstate::daemon
