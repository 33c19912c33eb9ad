// The job's processes as meshes see them, through MPI where hal has it: rank and count, and
// the communicators of groups across processes. Without MPI a job is one process.
#pragma once

#include <string>

#include "hal/dist.hpp"

namespace hal::dist::detail {

struct Processes {
  int rank = 0;
  int count = 1;
};

// From MPI (initialising it) when the launcher started more than one process, else 0 of 1.
// BackendUnavailable when the launcher started several but hal has no MPI.
Processes job_processes();

// The processes' communicator of the group `color` (collective over every process: each calls
// it the same number of times, in the same order), ordered by `key`, named `name`. NCCL
// instead of MPI when every rank of the group has a CUDA device and NCCL loads there (they
// agree in an all_reduce of the group's, its collective #1).
Communicator split_processes(int color, int key, std::string name, const Device& device);

}  // namespace hal::dist::detail
