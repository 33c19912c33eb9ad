// The environment's settings of the collectives: HAL_DIST_TIMEOUT and HAL_DIST_DEBUG, read at
// each call (cheap) so that a program may change them between communicators.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "hal/dist.hpp"

namespace hal::dist::detail {

// HAL_DIST_DEBUG: off (no check across ranks), check (the default: kind, dtype, element count,
// root and op compared before data moves), detail (full shapes too, and each collective logged
// at info level).
enum class DebugLevel { off, check, detail };
DebugLevel debug_level();

// HAL_DIST_LOCAL_ALGORITHM: auto (the default: the alpha-beta model chooses), ring or tree, for
// the local engine's all-reduce. nullopt for auto.
std::optional<AllReduceAlgorithm> forced_local_algorithm();

using Clock = std::chrono::steady_clock;
// HAL_DIST_TIMEOUT as a duration.
Clock::duration timeout();

// HAL_DIST_FINALIZE_TIMEOUT: how long hal's MPI_Finalize at exit may wait for the other
// processes before this one exits without it (EXIT_FAILURE). Unset, empty or "none": no bound
// (MPI's own behaviour). InvalidArgument for a malformed value, naming it.
std::optional<Clock::duration> finalize_timeout();

// The most elements the MPI engine passes to one MPI call: MPI's counts are int and Open MPI 4.1
// has no MPI-4 big-count (_c) calls, so 2^31 - 1. HAL_DIST_MPI_MAX_ELEMENTS lowers it (1 to
// 2^31 - 1), for tests of the refusal on small tensors. InvalidArgument for a malformed value.
int64_t mpi_max_elements();

}  // namespace hal::dist::detail
