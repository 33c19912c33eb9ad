// Which instance runs the next batch: a pure function of each instance's load, so that the
// policies are tested without devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "hal/serve.hpp"

namespace hal::serve {

struct InstanceLoad {
  bool healthy = true;
  int64_t batches = 0;      // queued or running
  int64_t requests = 0;     // queued or running
  double work_ahead_s = 0;  // predicted time of what is queued or still running
  double batch_s = 0;       // the batch's predicted time on this instance
  int64_t max_batches = 2;  // it takes no more at once
};

struct Choice {
  enum Kind { run, wait, none_healthy } kind = none_healthy;
  size_t instance = 0;  // for run
};

// `next` is the cursor (round-robin's turn; where the others break ties), advanced past the
// instance chosen. Round-robin names one instance among the healthy ones; where that one is full
// the answer is `wait` (a slot frees when one of its batches ends), so that its strict turns are
// not quietly replaced by "any free one". Least-outstanding takes the fewest requests queued or
// running, and predicted the earliest completion, among the instances with room, so that a
// batch never waits on a full instance while another could take it now; each waits only when
// none has room, on the fewest requests or the least work ahead. Room: fewer than
// `max_batches` queued or running; for predicted also beyond that, while the predicted work
// queued is less than the slowest healthy instance's time for this batch (up to 8 x
// max_batches), so that a queue on a fast instance is weighed against a slow idle one.
Choice choose_instance(Balancer policy, const std::vector<InstanceLoad>& loads, size_t& next);

}  // namespace hal::serve
