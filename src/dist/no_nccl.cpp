// A build with MPI but without NCCL's header (no CUDA toolkit): NCCL is unavailable, and says
// why.
#include "hal/dist.hpp"
#include "hal/error.hpp"

namespace hal::dist {

bool nccl_available(std::string* why) {
  if (why) *why = "hal was built without NCCL's header (nccl.h, from the CUDA toolkit or NCCL)";
  return false;
}

Communicator Communicator::nccl(const Device&, const Communicator&) {
  throw Error(ErrorCode::BackendUnavailable,
              "Communicator::nccl: hal was built without NCCL's header (nccl.h)");
}

}  // namespace hal::dist
