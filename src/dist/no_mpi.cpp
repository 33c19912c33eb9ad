// A build without MPI (no libopenmpi-dev when hal was configured): one process, and the MPI
// engine's entry points say so.
#include "dist/process_group.hpp"
#include "hal/error.hpp"

namespace hal::dist {
namespace {

[[noreturn]] void no_mpi(const std::string& what) {
  throw Error(ErrorCode::BackendUnavailable,
              what +
                  ": hal was built without MPI (install libopenmpi-dev and openmpi-bin, "
                  "then configure again)");
}

}  // namespace

bool mpi_built() { return false; }

Communicator Communicator::world() { no_mpi("Communicator::world"); }

Communicator Communicator::nccl(const Device&, const Communicator&) {
  no_mpi("Communicator::nccl (bootstrapped over MPI)");
}

bool nccl_available(std::string* why) {
  if (why) *why = "hal was built without MPI, which NCCL's communicators are bootstrapped over";
  return false;
}

namespace detail {

Processes job_processes() {
  const LaunchInfo launch = launch_info();
  if (launch.several())
    no_mpi("this process is rank " + std::to_string(launch.rank) + " of " +
           (launch.size ? std::to_string(launch.size) : "an unstated number") + " (" +
           launch.source + ")");
  return {};
}

Communicator split_processes(int, int, std::string name, const Device&) {
  no_mpi("the mesh group " + name);
}

}  // namespace detail
}  // namespace hal::dist
