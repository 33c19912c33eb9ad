// Names of the enums of hal/dist.hpp, as messages and JSON print them.
#include "hal/dist.hpp"

namespace hal::dist {

std::string_view to_string(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::prod:
      return "prod";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
    case ReduceOp::avg:
      return "avg";
  }
  return "unknown";
}

std::string_view to_string(Engine engine) noexcept {
  switch (engine) {
    case Engine::local:
      return "local";
    case Engine::mpi:
      return "mpi";
    case Engine::nccl:
      return "nccl";
  }
  return "unknown";
}

std::string_view to_string(Collective collective) noexcept {
  switch (collective) {
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::broadcast:
      return "broadcast";
    case Collective::reduce:
      return "reduce";
    case Collective::all_gather:
      return "all_gather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_to_all:
      return "all_to_all";
    case Collective::send:
      return "send";
    case Collective::recv:
      return "recv";
    case Collective::barrier:
      return "barrier";
  }
  return "unknown";
}

std::string_view to_string(AllReduceAlgorithm algorithm) noexcept {
  return algorithm == AllReduceAlgorithm::ring ? "ring" : "tree";
}

}  // namespace hal::dist
