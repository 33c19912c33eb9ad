#include "serve/balancer.hpp"

#include <limits>

namespace hal::serve {

std::string to_string(Balancer balancer) {
  switch (balancer) {
    case Balancer::predicted:
      return "predicted";
    case Balancer::round_robin:
      return "round-robin";
    case Balancer::least_outstanding:
      return "least-outstanding";
  }
  return "?";
}

std::optional<Balancer> parse_balancer(const std::string& text) {
  for (Balancer b : {Balancer::predicted, Balancer::round_robin, Balancer::least_outstanding})
    if (to_string(b) == text) return b;
  return std::nullopt;
}

Choice choose_instance(Balancer policy, const std::vector<InstanceLoad>& loads, size_t& next) {
  const size_t n = loads.size();
  std::optional<size_t> chosen;
  if (policy == Balancer::round_robin) {
    for (size_t step = 0; step < n && !chosen; ++step)
      if (loads[(next + step) % n].healthy) chosen = (next + step) % n;
    if (chosen && loads[*chosen].batches < loads[*chosen].max_batches) next = (*chosen + 1) % n;
  } else {
    // Ties go to the first after the cursor, so equal instances share the work.
    double best = std::numeric_limits<double>::infinity();
    for (size_t step = 0; step < n; ++step) {
      const size_t i = (next + step) % n;
      if (!loads[i].healthy) continue;
      const double score = policy == Balancer::least_outstanding
                               ? static_cast<double>(loads[i].requests)
                               : loads[i].work_ahead_s + loads[i].batch_s;
      if (!chosen || score < best) {
        best = score;
        chosen = i;
      }
    }
    if (chosen && loads[*chosen].batches < loads[*chosen].max_batches) next = (*chosen + 1) % n;
  }
  if (!chosen) return {Choice::none_healthy, 0};
  if (loads[*chosen].batches >= loads[*chosen].max_batches) return {Choice::wait, *chosen};
  return {Choice::run, *chosen};
}

}  // namespace hal::serve
