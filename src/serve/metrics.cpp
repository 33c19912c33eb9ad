#include "serve/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hal::serve {
namespace {

const std::vector<double> kSecondsBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                             1,      2.5,     5,      10};
const std::vector<double> kBatchBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256};

std::string number(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

Histogram& histogram(std::map<std::string, Histogram>& map, const std::string& key,
                     const std::vector<double>& bounds) {
  return map.try_emplace(key, bounds).first->second;
}

void family(std::string& out, const std::string& name, const std::string& type,
            const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[bucket];
  ++count_;
  sum_ += value;
}

std::vector<uint64_t> Histogram::cumulative() const {
  std::vector<uint64_t> out;
  uint64_t running = 0;
  for (uint64_t c : counts_) out.push_back(running += c);
  return out;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::vector<uint64_t> totals = cumulative();
  const std::string prefix = labels.empty() ? "" : labels + ",";
  for (size_t i = 0; i < totals.size(); ++i) {
    const double bound = i < bounds_.size() ? bounds_[i] : INFINITY;
    out += name + "_bucket{" + prefix + "le=\"" + number(bound) + "\"} " +
           std::to_string(totals[i]) + "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + number(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

void Metrics::count_request(const std::string& model, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{model, status}];
}

void Metrics::observe_request(const std::string& model, double seconds) {
  std::lock_guard lock(mutex_);
  histogram(request_seconds_, model, kSecondsBuckets).observe(seconds);
}

void Metrics::observe_queue(const std::string& model, double seconds) {
  std::lock_guard lock(mutex_);
  histogram(queue_seconds_, model, kSecondsBuckets).observe(seconds);
}

void Metrics::observe_batch(const std::string& model, int64_t rows) {
  std::lock_guard lock(mutex_);
  histogram(batch_sizes_, model, kBatchBuckets).observe(static_cast<double>(rows));
}

void Metrics::count_instance_batch(const std::string& model, const std::string& device,
                                   int64_t rows) {
  std::lock_guard lock(mutex_);
  auto& [batches, total] = instance_[{model, device}];
  ++batches;
  total += static_cast<uint64_t>(rows);
}

uint64_t Metrics::requests(const std::string& model, int status) const {
  std::lock_guard lock(mutex_);
  const auto it = requests_.find({model, status});
  return it == requests_.end() ? 0 : it->second;
}

std::pair<uint64_t, double> Metrics::batches(const std::string& model) const {
  std::lock_guard lock(mutex_);
  const auto it = batch_sizes_.find(model);
  return it == batch_sizes_.end() ? std::pair<uint64_t, double>{0, 0}
                                  : std::pair{it->second.count(), it->second.sum()};
}

uint64_t Metrics::instance_rows(const std::string& model, const std::string& device) const {
  std::lock_guard lock(mutex_);
  const auto it = instance_.find({model, device});
  return it == instance_.end() ? 0 : it->second.second;
}

std::string Metrics::render(
    const std::map<std::string, std::pair<std::string, std::vector<Sample>>>& gauges) const {
  std::lock_guard lock(mutex_);
  std::string out;
  family(out, "hal_requests_total", "counter",
         "Inference requests answered, by model and HTTP status.");
  for (const auto& [key, count] : requests_)
    out += "hal_requests_total{model=\"" + label_value(key.first) + "\",code=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  const std::tuple<const char*, const char*, const std::map<std::string, Histogram>*> histograms[] =
      {{"hal_request_duration_seconds", "Time from a request's arrival to its answer.",
        &request_seconds_},
       {"hal_queue_duration_seconds", "Time a request waited before it first ran.",
        &queue_seconds_},
       {"hal_batch_size", "Rows in each batch run.", &batch_sizes_}};
  for (const auto& [name, help, map] : histograms) {
    family(out, name, "histogram", help);
    for (const auto& [model, h] : *map) h.render(out, name, "model=\"" + label_value(model) + "\"");
  }
  family(out, "hal_instance_batches_total", "counter", "Batches run by each model instance.");
  for (const auto& [key, counts] : instance_)
    out += "hal_instance_batches_total{model=\"" + label_value(key.first) + "\",device=\"" +
           label_value(key.second) + "\"} " + std::to_string(counts.first) + "\n";
  family(out, "hal_instance_rows_total", "counter", "Rows run by each model instance.");
  for (const auto& [key, counts] : instance_)
    out += "hal_instance_rows_total{model=\"" + label_value(key.first) + "\",device=\"" +
           label_value(key.second) + "\"} " + std::to_string(counts.second) + "\n";
  for (const auto& [name, gauge] : gauges) {
    family(out, name, "gauge", gauge.first);
    for (const Sample& sample : gauge.second)
      out += name + "{" + sample.labels + "} " + number(sample.value) + "\n";
  }
  return out;
}

}  // namespace hal::serve
