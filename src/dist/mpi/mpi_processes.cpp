// Meshes across processes, through MPI (and NCCL for CUDA devices where it loads).
#include "dist/mpi/mpi_comm.hpp"
#include "dist/process_group.hpp"

namespace hal::dist::detail {

Processes job_processes() {
  if (launch_info().size <= 1) return {};
  const std::shared_ptr<MpiComm> world = world_comm();
  return {world->rank(), world->size()};
}

Communicator split_processes(int color, int key, std::string name, const Device& device) {
  std::shared_ptr<MpiComm> group = world_comm()->split(color, key, name);
  Communicator mpi(group);
  if (device && device.info().backend() == "cuda" && nccl_available())
    return Communicator::nccl(device, mpi);
  return mpi;
}

}  // namespace hal::dist::detail
