// The local engine's algorithms: each enqueues one collective on the lanes' streams (copies
// between devices, reductions, and events between lanes) and returns; the group then waits
// for the lanes. Every lane first waits for its caller's stream (Lane::ready).
#pragma once

#include <vector>

#include "dist/local/lanes.hpp"

namespace hal::dist::detail {

// `root` is the root (broadcast, reduce); lanes are in rank order (send and recv: the sender,
// then the receiver).
void run_local(Collective kind, ReduceOp op, int root, std::vector<Lane>& lanes,
               AllReduceAlgorithm all_reduce_algorithm);

}  // namespace hal::dist::detail
