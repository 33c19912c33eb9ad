// One side of `hal compare`: its workload on a device in this process, or in a child process
// with its own environment (--b-env: an A/B of settings or builds rather than of hardware).
#pragma once

#include <cstdint>
#include <filesystem>
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

// The child's timeline while this process records a trace: the child records its own into
// `file` (HAL_TRACE), and merge_child_trace adds it to this process's once both are written. Each
// process names a span's start on steady_clock, which the two share, to align their times.
struct ChildTrace {
  std::filesystem::path file;
  uint64_t parent_anchor_ns = 0;  // this process's "start side B" span began (steady_clock)
  uint64_t child_anchor_ns = 0;   // the child's "side B" span began (steady_clock)
};

// `hal compare-worker` in a child process with `environment` (VAR=VALUE entries) added to this
// process's: its failures come back as hal::Error with their code, naming the side. With `trace`,
// the child records its trace into trace->file and the anchors are filled in.
std::unique_ptr<CompareSide> child_side(const std::string& device_id, const WorkloadSpec& spec,
                                        const std::vector<std::string>& environment,
                                        ChildTrace* trace = nullptr);

// Adds the child's trace (written when it exited) to `into`, this process's (written by now): the
// child's events on this process's clock, under its own pid, named "hal compare-worker (side
// B)". Then removes the child's file. InvalidArgument naming the file that cannot be read or
// written, or that lacks its anchor span.
void merge_child_trace(const ChildTrace& trace, const std::filesystem::path& into);

// The child's loop: reads commands on stdin ("run", "output"), answers on stdout.
void serve_compare_side(const std::string& device_id, const WorkloadSpec& spec);

}  // namespace hal::tool
