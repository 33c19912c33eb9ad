// The process's rank from its launcher's environment: mpirun (Open MPI), PMIx and PMI
// launchers (MPICH's hydra, Slurm's srun), in that order. A size the launcher does not state
// reads as rank + 1; the MPI engine takes the size from MPI itself.
#include <cstdlib>
#include <optional>
#include <string>

#include "hal/dist.hpp"
#include "hal/error.hpp"
#include "hal/units.hpp"

namespace hal::dist {
namespace {

constexpr uint64_t kMaxRanks = 1u << 24;

std::optional<int> read(const char* name) {
  const char* text = name ? std::getenv(name) : nullptr;
  if (text == nullptr || *text == '\0') return std::nullopt;
  const Parsed<uint64_t> parsed = parse_count(name, text, 0, kMaxRanks);
  if (!parsed.value)
    throw Error(ErrorCode::InvalidArgument, "launcher environment: " + parsed.error);
  return static_cast<int>(*parsed.value);
}

struct Names {
  const char *rank, *size, *local_rank, *local_size, *source;
};

}  // namespace

LaunchInfo launch_info() {
  static constexpr Names kLaunchers[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_*"},
      {"PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE", "PMIX_*"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_*"},
      // Slurm's tasks per node may read "2(x3)": the local size is left to MPI.
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, "SLURM_*"},
  };
  for (const Names& names : kLaunchers) {
    const std::optional<int> rank = read(names.rank);
    if (!rank) continue;
    LaunchInfo info;
    info.source = names.source;
    info.rank = *rank;
    info.size = read(names.size).value_or(*rank + 1);
    info.local_rank = read(names.local_rank).value_or(0);
    info.local_size = read(names.local_size).value_or(1);
    if (info.size < 1 || info.rank >= info.size || info.local_rank >= std::max(info.local_size, 1))
      throw Error(ErrorCode::InvalidArgument,
                  "launcher environment (" + info.source + "): rank " + std::to_string(info.rank) +
                      " of " + std::to_string(info.size) + ", local rank " +
                      std::to_string(info.local_rank) + " of " + std::to_string(info.local_size) +
                      " is inconsistent");
    return info;
  }
  return {};
}

}  // namespace hal::dist
