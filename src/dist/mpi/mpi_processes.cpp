// Meshes across processes, through MPI (and NCCL for CUDA devices where every rank has it).
#include "core/host_cpu.hpp"
#include "dist/mpi/mpi_comm.hpp"
#include "dist/process_group.hpp"

namespace hal::dist::detail {
namespace {

// Whether every rank of `group` can take NCCL (a CUDA device, NCCL loadable on its node): they
// agree in a small all_reduce of the group's own, bounded as any, so that all of them take the
// same engine. Each deciding alone, a rank without NCCL took MPI while the others waited for it
// in NCCL's set-up.
bool every_rank_has_nccl(const Communicator& group, const Device& device) {
  const bool mine = device && device.info().backend() == "cuda" && nccl_available();
  Stream stream = hal::detail::host_cpu().create_stream();
  const Tensor flag = from_vector<int32_t>({mine ? 1 : 0}, {1}, stream);
  group.all_reduce(flag, ReduceOp::min, stream).wait();
  return flag.to_vector<int32_t>(stream)[0] == 1;
}

}  // namespace

Processes job_processes() {
  if (!launch_info().several()) return {};
  const std::shared_ptr<MpiComm> world = world_comm();
  return {world->rank(), world->size()};
}

Communicator split_processes(int color, int key, std::string name, const Device& device) {
  std::shared_ptr<MpiComm> group = world_comm()->split(color, key, name);
  Communicator mpi(group);
  if (every_rank_has_nccl(mpi, device)) return Communicator::nccl(device, mpi);
  return mpi;
}

}  // namespace hal::dist::detail
