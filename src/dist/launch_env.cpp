// The process's rank from its launcher's environment: mpirun (Open MPI), PMIx and PMI
// launchers (MPICH's hydra, Slurm's srun), in that order. A size or local figure that no
// launcher states reads as 0 (unknown); the MPI engine takes the size from MPI itself.
#include <cstdlib>
#include <iterator>
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

std::string count_text(int count) {
  return count == 0 ? "an unstated number" : std::to_string(count);
}

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
  constexpr size_t kCount = std::size(kLaunchers);
  for (size_t first = 0; first < kCount; ++first) {
    const std::optional<int> rank = read(kLaunchers[first].rank);
    if (!rank) continue;
    // What the launcher that gave the rank leaves out, a later one may state (srun --mpi=pmix
    // sets PMIX_RANK alone beside SLURM_*); what none states is unknown (0), for MPI to tell.
    const auto stated = [&](const char* Names::*field) -> std::optional<int> {
      for (size_t i = first; i < kCount; ++i)
        if (const std::optional<int> value = read(kLaunchers[i].*field)) return value;
      return std::nullopt;
    };
    LaunchInfo info;
    info.source = kLaunchers[first].source;
    info.rank = *rank;
    info.size = stated(&Names::size).value_or(0);
    info.local_rank = stated(&Names::local_rank).value_or(0);
    info.local_size = stated(&Names::local_size).value_or(0);
    const bool bad_size = info.size == 0 ? false : info.rank >= info.size;
    const bool bad_local = info.local_size == 0 ? false : info.local_rank >= info.local_size;
    if (bad_size || bad_local)
      throw Error(ErrorCode::InvalidArgument, "launcher environment (" + info.source + "): rank " +
                                                  std::to_string(info.rank) + " of " +
                                                  count_text(info.size) + ", local rank " +
                                                  std::to_string(info.local_rank) + " of " +
                                                  count_text(info.local_size) + " is inconsistent");
    return info;
  }
  return {};
}

}  // namespace hal::dist
