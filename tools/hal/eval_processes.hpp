// hal eval across processes (mpirun): what one process evaluated, and its gathering to rank 0
// over the job's MPI communicator, in rank order.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hal/dist.hpp"
#include "hal/error.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"

namespace hal::tool {

// One process's part of an evaluation: its devices' entries of hal.eval/1 and its outputs,
// joined in the data's order, on the host. A part that failed carries its error instead, so
// that the other ranks still reach every collective and rank 0 can name the rank.
struct ProcessPart {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  std::vector<std::pair<std::string, Tensor>> outputs;  // the model's order
  bool failed = false;
  ErrorCode error_code = ErrorCode::Ok;
  std::string error_message;
};

// The job's communicator when `hal eval` was started by a launcher of more than one process,
// else an empty one. BackendUnavailable in a build without MPI (each process would otherwise
// evaluate the whole data set on its own).
dist::Communicator eval_processes();

// Rank 0 receives every rank's part (its own first) in rank order; another rank sends its own
// and gets an empty list. Every rank calls it once, failed or not. The collectives fail with
// Timeout, naming the rank, when one does not take part within HAL_DIST_TIMEOUT.
std::vector<ProcessPart> gather_parts(const dist::Communicator& world, ProcessPart mine,
                                      Stream& host);

}  // namespace hal::tool
