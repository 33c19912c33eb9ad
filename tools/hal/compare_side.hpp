// One side of `hal compare`: its workload on a device in this process, or in a child process
// with its own environment (--b-env: an A/B of settings or builds rather than of hardware).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compare_workload.hpp"

namespace hal::tool {

class CompareSide {
 public:
  virtual ~CompareSide() = default;
  // One timed run, in seconds.
  virtual double timed_run() = 0;
  // The latest run's output, as f32.
  virtual std::vector<float> output() = 0;
};

std::unique_ptr<CompareSide> local_side(const std::string& device_id, const WorkloadSpec& spec);

// `hal compare-worker` in a child process with `environment` (VAR=VALUE entries) added to this
// process's: its failures come back as hal::Error with their code, naming the side.
std::unique_ptr<CompareSide> child_side(const std::string& device_id, const WorkloadSpec& spec,
                                        const std::vector<std::string>& environment);

// The child's loop: reads commands on stdin ("run", "output"), answers on stdout.
void serve_compare_side(const std::string& device_id, const WorkloadSpec& spec);

}  // namespace hal::tool
