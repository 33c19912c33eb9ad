#include "serve/balancer.hpp"

#include <algorithm>
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

// Whether `load` takes another batch. Predicted placement lets a fast instance queue work until
// it holds as much as the slowest healthy instance takes for this batch (`horizon_s`): with a
// fixed count of batches a fast device would never hold enough for a slow one to finish first,
// and the slow ones would idle while requests wait.
bool has_room(Balancer policy, const InstanceLoad& load, double horizon_s) {
  if (load.batches < load.max_batches) return true;
  return policy == Balancer::predicted && load.batches < 8 * load.max_batches &&
         load.work_ahead_s < horizon_s;
}

Choice choose_instance(Balancer policy, const std::vector<InstanceLoad>& loads, size_t& next) {
  const size_t n = loads.size();
  double horizon_s = 0;
  for (const InstanceLoad& load : loads)
    if (load.healthy) horizon_s = std::max(horizon_s, load.batch_s);
  std::optional<size_t> chosen;
  if (policy == Balancer::round_robin) {
    for (size_t step = 0; step < n && !chosen; ++step)
      if (loads[(next + step) % n].healthy) chosen = (next + step) % n;
  } else {
    // Ties go to the first after the cursor, so equal instances share the work.
    double best = std::numeric_limits<double>::infinity();
    for (size_t step = 0; step < n; ++step) {
      const size_t i = (next + step) % n;
      if (!loads[i].healthy) continue;
      // Only instances that take the batch now compete: waiting on a full one while another
      // has room leaves that one idle and the batch late. For predicted, an instance past its
      // room is never the only way to finish early; for least-outstanding, requests and batches
      // part ways (a batch holds one request or many), so the fewest requests can sit in full
      // batch slots while an instance with more requests in fewer batches has a free one.
      if (!has_room(policy, loads[i], horizon_s)) continue;
      const double score = policy == Balancer::least_outstanding
                               ? static_cast<double>(loads[i].requests)
                               : loads[i].work_ahead_s + loads[i].batch_s;
      if (!chosen || score < best) {
        best = score;
        chosen = i;
      }
    }
  }
  if (!chosen) {
    // No healthy instance has room (or none is healthy): wait for the one that frees first by
    // the policy's own measure, the least work ahead or the fewest requests.
    const auto key = [&](size_t i) {
      return policy == Balancer::predicted ? loads[i].work_ahead_s
                                           : static_cast<double>(loads[i].requests);
    };
    size_t waited = n;
    for (size_t i = 0; i < n; ++i)
      if (loads[i].healthy && (waited == n || key(i) < key(waited))) waited = i;
    if (waited == n) return {Choice::none_healthy, 0};
    return {Choice::wait, waited};
  }
  // Round-robin only: its turn's instance is waited for when full, not skipped.
  if (!has_room(policy, loads[*chosen], horizon_s)) return {Choice::wait, *chosen};
  next = (*chosen + 1) % n;
  return {Choice::run, *chosen};
}

}  // namespace hal::serve
