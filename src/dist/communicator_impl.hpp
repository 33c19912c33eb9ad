// What every engine implements: one rank's side of a communicator. The public Communicator has
// checked the call before it reaches submit (tensors, devices, sizes, root, op and dtype).
#pragma once

#include <string>

#include "hal/dist.hpp"

namespace hal::dist::detail {

// One call of a collective as a rank made it. In place: input and output are the same tensor.
// Unused tensors are undefined (broadcast has only `output`, send only `input`, recv only
// `output`, barrier neither; reduce's output is undefined off the root).
struct CollectiveCall {
  Collective kind = Collective::barrier;
  Tensor input, output;
  ReduceOp op = ReduceOp::sum;
  int root = 0;  // broadcast and reduce: the root; send and recv: the peer
  int tag = 0;
  Stream stream;
};

class CommunicatorImpl {
 public:
  virtual ~CommunicatorImpl() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Engine engine() const = 0;
  virtual const std::string& name() const = 0;
  virtual Device device() const { return {}; }
  virtual Work submit(const CollectiveCall& call) = 0;
};

}  // namespace hal::dist::detail
