// Shares of a global batch: proportional to each rank's throughput, whole samples.
#include <algorithm>
#include <cmath>

#include "hal/data_parallel.hpp"
#include "hal/error.hpp"

namespace hal::train {

std::vector<int64_t> split_batch(int64_t batch, const std::vector<double>& weights) {
  const auto ranks = static_cast<int64_t>(weights.size());
  if (ranks == 0 || batch < ranks)
    throw Error(ErrorCode::InvalidArgument, "data-parallel: a batch of " + std::to_string(batch) +
                                                " samples cannot give " + std::to_string(ranks) +
                                                " ranks one sample each");
  double total = 0;
  for (size_t r = 0; r < weights.size(); ++r) {
    if (!(weights[r] > 0) || !std::isfinite(weights[r]))
      throw Error(ErrorCode::InvalidArgument, "data-parallel: rank " + std::to_string(r) +
                                                  "'s weight " + std::to_string(weights[r]) +
                                                  " is not finite and > 0");
    total += weights[r];
  }
  // Largest remainders, then one sample for any rank left without, taken from the largest.
  std::vector<int64_t> counts(weights.size(), 0);
  std::vector<std::pair<double, size_t>> remainders;
  int64_t given = 0;
  for (size_t r = 0; r < weights.size(); ++r) {
    const double exact = static_cast<double>(batch) * weights[r] / total;
    counts[r] = static_cast<int64_t>(std::floor(exact));
    given += counts[r];
    remainders.emplace_back(exact - std::floor(exact), r);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < batch; ++i, ++given)
    ++counts[remainders[i % remainders.size()].second];
  for (int64_t& count : counts)
    if (count == 0) {
      --*std::max_element(counts.begin(), counts.end());
      count = 1;
    }
  return counts;
}

}  // namespace hal::train
