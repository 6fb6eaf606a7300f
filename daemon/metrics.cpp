// Text exposition: HELP and TYPE once per family, then one line per series; histograms
// as cumulative _bucket lines with le="+Inf", then _sum and _count. Series without
// labels exist from the start (a scraper sees 0, not nothing).
#include "daemon/metrics.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "daemon/process_sample.hpp"
#include "kstate/build_info.hpp"

namespace kstate::daemon {
namespace {

std::string format_number(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  char text[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
  }
  // The shortest spelling that reads back as the same double ("0.1", not "0.10000000000000001").
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) {
      break;
    }
  }
  return text;
}

std::string escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string label_text(const std::vector<std::string>& names, const LabelValues& values,
                       std::string_view extra_name = {}, std::string_view extra_value = {}) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + escape_label_value(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += std::string(extra_name) + "=\"" + std::string(extra_value) + "\"";
  }
  if (!out.empty()) {
    out += "}";
  }
  return out;
}

const char* type_name(MetricFamily::Type type) {
  switch (type) {
    case MetricFamily::Type::counter:
      return "counter";
    case MetricFamily::Type::gauge:
      return "gauge";
    case MetricFamily::Type::histogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

MetricFamily::MetricFamily(std::mutex& mutex, std::string name, std::string help, Type type,
                           std::vector<std::string> label_names, std::vector<double> buckets)
    : mutex_(mutex),
      name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      bucket_bounds_(std::move(buckets)) {
  if (label_names_.empty()) {
    series({});
  }
}

MetricFamily::Series& MetricFamily::series(const LabelValues& labels) {
  if (labels.size() != label_names_.size()) {
    throw std::logic_error("metric " + name_ + ": wrong number of label values");
  }
  auto [it, inserted] = series_.try_emplace(labels);
  if (inserted && type_ == Type::histogram) {
    it->second.buckets.assign(bucket_bounds_.size(), 0);
  }
  return it->second;
}

void MetricFamily::add(const LabelValues& labels, double amount) {
  if (type_ == Type::histogram || (type_ == Type::counter && amount < 0)) {
    throw std::logic_error("metric " + name_ + ": counters only go up");
  }
  std::lock_guard lock(mutex_);
  series(labels).value += amount;
}

void MetricFamily::set(const LabelValues& labels, double value) {
  if (type_ == Type::histogram) {
    throw std::logic_error("metric " + name_ + ": a histogram cannot be set");
  }
  std::lock_guard lock(mutex_);
  auto& entry = series(labels);
  if (type_ == Type::counter && value < entry.value) {
    throw std::logic_error("metric " + name_ + ": counters only go up");
  }
  entry.value = value;
}

void MetricFamily::observe(const LabelValues& labels, double value) {
  if (type_ != Type::histogram) {
    throw std::logic_error("metric " + name_ + ": not a histogram");
  }
  std::lock_guard lock(mutex_);
  auto& entry = series(labels);
  for (std::size_t i = 0; i < bucket_bounds_.size(); ++i) {
    if (value <= bucket_bounds_[i]) {
      ++entry.buckets[i];
      break;
    }
  }
  entry.value += value;
  ++entry.count;
}

double MetricFamily::value(const LabelValues& labels) const {
  std::lock_guard lock(mutex_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0.0 : it->second.value;
}

std::uint64_t MetricFamily::count(const LabelValues& labels) const {
  std::lock_guard lock(mutex_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.count;
}

void MetricFamily::render(std::string& out) const {
  out += "# HELP " + name_ + " " + escape_help(help_) + "\n";
  out += "# TYPE " + name_ + " " + type_name(type_) + "\n";
  for (const auto& [labels, entry] : series_) {
    if (type_ != Type::histogram) {
      out += name_ + label_text(label_names_, labels) + " " + format_number(entry.value) + "\n";
      continue;
    }
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bucket_bounds_.size(); ++i) {
      cumulative += entry.buckets[i];
      out += name_ + "_bucket" + label_text(label_names_, labels, "le", format_number(bucket_bounds_[i])) + " " +
             std::to_string(cumulative) + "\n";
    }
    out +=
        name_ + "_bucket" + label_text(label_names_, labels, "le", "+Inf") + " " + std::to_string(entry.count) + "\n";
    out += name_ + "_sum" + label_text(label_names_, labels) + " " + format_number(entry.value) + "\n";
    out += name_ + "_count" + label_text(label_names_, labels) + " " + std::to_string(entry.count) + "\n";
  }
}

MetricFamily& MetricsRegistry::add(std::unique_ptr<MetricFamily> family) {
  std::lock_guard lock(mutex_);
  families_.push_back(std::move(family));
  return *families_.back();
}

MetricFamily& MetricsRegistry::counter(std::string name, std::string help, std::vector<std::string> label_names) {
  return add(std::make_unique<MetricFamily>(mutex_, std::move(name), std::move(help), MetricFamily::Type::counter,
                                            std::move(label_names)));
}

MetricFamily& MetricsRegistry::gauge(std::string name, std::string help, std::vector<std::string> label_names) {
  return add(std::make_unique<MetricFamily>(mutex_, std::move(name), std::move(help), MetricFamily::Type::gauge,
                                            std::move(label_names)));
}

MetricFamily& MetricsRegistry::histogram(std::string name, std::string help, std::vector<double> buckets,
                                         std::vector<std::string> label_names) {
  return add(std::make_unique<MetricFamily>(mutex_, std::move(name), std::move(help), MetricFamily::Type::histogram,
                                            std::move(label_names), std::move(buckets)));
}

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& family : families_) {
    family->render(out);
  }
  return out;
}

DaemonMetrics::DaemonMetrics(MetricsRegistry& registry)
    : reconciles(registry.counter("kstate_reconciles_total", "Reconciles run, by kind (full, files) and result",
                                  {"kind", "result"})),
      reconcile_duration(registry.histogram("kstate_reconcile_duration_seconds", "Duration of reconciles",
                                            {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}, {"kind"})),
      state_results(registry.counter("kstate_state_results_total",
                                     "States evaluated, by result (unchanged, created, updated, deleted, failed)",
                                     {"result"})),
      managed_objects(registry.gauge("kstate_managed_objects", "Objects kstate manages after the last reconcile")),
      api_requests(registry.counter("kstate_api_requests_total",
                                    "Requests the API server answered, by verb and HTTP code", {"verb", "code"})),
      api_request_failures(registry.counter(
          "kstate_api_request_failures_total",
          "Requests without an answer, by verb and what failed (resolve, connect, connect_timeout, tls, tls_timeout, "
          "write, timeout, read, response_too_large, client)",
          {"verb", "failure"})),
      api_retries(registry.counter("kstate_api_retries_total", "API requests retried after a retryable failure")),
      discovery_cache_hits(registry.counter("kstate_discovery_cache_hits_total", "Discovery answered from the cache")),
      discovery_cache_misses(
          registry.counter("kstate_discovery_cache_misses_total", "Discovery fetched from the API server")),
      inotify_overflows(
          registry.counter("kstate_inotify_overflows_total", "inotify queue overflows (each forces a full rescan)")),
      last_success_timestamp(registry.gauge("kstate_last_successful_reconcile_timestamp_seconds",
                                            "Unix time of the last reconcile without failures")),
      leader(registry.gauge("kstate_leader", "1 when this instance holds the leader Lease (or election is off)")),
      ready(registry.gauge("kstate_ready", "1 when the first reconcile is done and the API server is reachable")),
      applyset_writer_conflict(
          registry.gauge("kstate_applyset_writer_conflict",
                         "1 while another writer reconciles this daemon's ApplySet, so that this one writes nothing")),
      build_info(registry.gauge("kstate_build_info", "Always 1; the version and commit kstate was built from",
                                {"version", "commit"})),
      process_resident_memory(registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes")),
      process_open_fds(registry.gauge("process_open_fds", "Number of open file descriptors")),
      process_start_time(
          registry.gauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds")),
      process_cpu(registry.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds")),
      drift_corrections(registry.counter(
          "kstate_drift_corrections_total",
          "Objects whose state ran again because a watch saw them changed or deleted through the API, by reason "
          "(deleted, fields_taken, labels_removed, replaced)",
          {"reason"})),
      drift_fights(registry.counter("kstate_drift_fights_total",
                                    "Drift corrections undone again within a minute, by the field manager that "
                                    "changed the object (kstate backs off; see kstate.io/ignore-fields)",
                                    {"manager"})),
      drift_watches(registry.gauge("kstate_drift_watches",
                                   "Kinds watched for drift, by state (watching; forbidden: left to the resync)",
                                   {"state"})) {
  build_info.set({kstate::build_info::version, kstate::build_info::git_commit}, 1);
  sample_process();
}

void DaemonMetrics::sample_process() {
  const ProcessSample sample = read_process_sample();
  process_resident_memory.set({}, sample.resident_memory_bytes);
  process_open_fds.set({}, sample.open_fds);
  process_start_time.set({}, sample.start_time_seconds);
  if (sample.cpu_seconds >= process_cpu.value()) {
    process_cpu.set({}, sample.cpu_seconds);
  }
}

}  // namespace kstate::daemon
