// The server's metrics and their Prometheus text format (version 0.0.4): counters and
// histograms by label, gauges read when scraped. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace hal::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // The `name`_bucket, _sum and _count lines for `labels` ("model=\"m\"").
  void render(std::string& out, const std::string& name, const std::string& labels) const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  // Observations at or below each upper bound, cumulative.
  std::vector<uint64_t> cumulative() const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, the last one +Inf
  uint64_t count_ = 0;
  double sum_ = 0;
};

// One gauge sample: label text ("device=\"cpu:0\"") and value.
struct Sample {
  std::string labels;
  double value = 0;
};

class Metrics {
 public:
  void count_request(const std::string& model, int status);
  void observe_request(const std::string& model, double seconds);
  void observe_queue(const std::string& model, double seconds);
  void observe_batch(const std::string& model, int64_t rows);
  void count_instance_batch(const std::string& model, const std::string& device, int64_t rows);

  // Requests of `model` answered with `status` so far.
  uint64_t requests(const std::string& model, int status) const;
  // The batch-size histogram's count and sum for `model`.
  std::pair<uint64_t, double> batches(const std::string& model) const;
  // Rows run by `model`'s instance on `device`.
  uint64_t instance_rows(const std::string& model, const std::string& device) const;

  // Every metric; `gauges` are named families of samples read at scrape time.
  std::string render(
      const std::map<std::string, std::pair<std::string, std::vector<Sample>>>& gauges) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> request_seconds_, queue_seconds_, batch_sizes_;
  std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>>
      instance_;  // batches, rows
};

// A label value with \, " and newlines escaped as the format asks.
std::string label_value(const std::string& text);

}  // namespace hal::serve
