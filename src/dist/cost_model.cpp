// The alpha-beta-gamma model of all-reduce (docs/distributed.md): what the local engine
// chooses by, and what benchmarks set measured times beside.
#include <algorithm>
#include <cmath>
#include <limits>

#include "hal/dist.hpp"
#include "hal/error.hpp"

namespace hal::dist {
namespace {

int64_t ceil_log2(int64_t p) {
  int64_t levels = 0;
  while ((int64_t{1} << levels) < p) ++levels;
  return levels;
}

}  // namespace

double predict_all_reduce(AllReduceAlgorithm algorithm, int64_t ranks, double bytes,
                          const LinkModel& link) {
  if (ranks < 1 || !(bytes >= 0) || !std::isfinite(bytes))
    throw Error(ErrorCode::InvalidArgument, "predict_all_reduce: " + std::to_string(ranks) +
                                                " ranks and " + std::to_string(bytes) +
                                                " bytes; ranks >= 1 and bytes >= 0 finite");
  if (ranks == 1) return 0;
  const double p = static_cast<double>(ranks);
  const double n = bytes;
  if (algorithm == AllReduceAlgorithm::ring) {
    // Reduce-scatter then all-gather: 2(p-1) steps, each moving n/p; (p-1) reductions of n/p.
    return 2 * (p - 1) * link.alpha_s + 2 * (p - 1) / p * n * link.beta_s_per_byte +
           (p - 1) / p * n * link.gamma_s_per_byte;
  }
  // Binomial tree: ceil(log2 p) levels up (move and reduce the whole message), as many down.
  const double levels = static_cast<double>(ceil_log2(ranks));
  return 2 * levels * (link.alpha_s + n * link.beta_s_per_byte) +
         levels * n * link.gamma_s_per_byte;
}

AllReduceAlgorithm choose_all_reduce(int64_t ranks, double bytes, const LinkModel& link) {
  const double ring = predict_all_reduce(AllReduceAlgorithm::ring, ranks, bytes, link);
  const double tree = predict_all_reduce(AllReduceAlgorithm::tree, ranks, bytes, link);
  return tree < ring ? AllReduceAlgorithm::tree : AllReduceAlgorithm::ring;
}

LinkModel link_model(const std::vector<Device>& devices) {
  // A reduce-scatter step launches a copy and a reduction, an all-gather step a copy: 1.5
  // launches a step. A copy passes over the bytes once at the device's bandwidth; a reduction
  // reads two operands and writes one.
  double launch_us = 0, bandwidth_gbps = std::numeric_limits<double>::infinity();
  for (const Device& device : devices) {
    const PeakFigures& peak = device.info().peak;
    launch_us = std::max(launch_us, peak.launch_latency_us);
    if (peak.bandwidth_gbps > 0) bandwidth_gbps = std::min(bandwidth_gbps, peak.bandwidth_gbps);
  }
  LinkModel link;
  if (launch_us > 0) link.alpha_s = 1.5 * launch_us * 1e-6;
  if (std::isfinite(bandwidth_gbps)) {
    link.beta_s_per_byte = 1.0 / (bandwidth_gbps * 1e9);
    link.gamma_s_per_byte = 3.0 / (bandwidth_gbps * 1e9);
  }
  return link;
}

}  // namespace hal::dist
