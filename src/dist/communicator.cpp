// Communicator: the checks every engine shares, then the engine's submit.
#include <string>

#include "core/error_context.hpp"
#include "dist/communicator_impl.hpp"
#include "dist/host_reduce.hpp"

namespace hal::dist {
namespace {

// Tags up to MPI's smallest guaranteed MPI_TAG_UB.
constexpr int kMaxTag = 32767;

detail::CommunicatorImpl& checked(const std::shared_ptr<detail::CommunicatorImpl>& impl) {
  if (!impl)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Communicator");
  return *impl;
}

class CallCheck {
 public:
  CallCheck(const detail::CommunicatorImpl& comm, Collective kind) : comm_(comm), kind_(kind) {}

  [[noreturn]] void fail(ErrorCode code, const std::string& why) const {
    throw Error(code, std::string(to_string(kind_)) + " on communicator '" + comm_.name() +
                          "' (rank " + std::to_string(comm_.rank()) + " of " +
                          std::to_string(comm_.size()) + "): " + why);
  }

  void stream(const Stream& stream) const {
    if (!stream) fail(ErrorCode::InvalidArgument, "the stream is empty");
  }

  void tensor(const Tensor& t, std::string_view role, const Stream& stream) const {
    if (!t.defined())
      fail(ErrorCode::InvalidArgument, "the " + std::string(role) + " is undefined");
    if (!t.is_contiguous())
      fail(ErrorCode::InvalidArgument, "the " + std::string(role) + " (" + t.describe() +
                                           ") is not contiguous; pass t.contiguous(stream)");
    const Device device = t.device();
    if (!(device == stream.device()))
      fail(ErrorCode::InvalidArgument, "the " + std::string(role) + " (" + t.describe() +
                                           ") is not on the stream's device, " +
                                           stream.device().id());
    if (const Device own = comm_.device(); own && !(device == own))
      fail(ErrorCode::InvalidArgument, "the " + std::string(role) + " (" + t.describe() +
                                           ") is not on this rank's device, " + own.id());
  }

  void same_dtype(const Tensor& a, const Tensor& b) const {
    if (a.dtype() != b.dtype())
      fail(ErrorCode::InvalidArgument,
           "input " + a.describe() + " and output " + b.describe() + " differ in dtype");
  }

  void elements(const Tensor& t, int64_t expected, std::string_view role,
                const std::string& rule) const {
    if (t.numel() != expected)
      fail(ErrorCode::InvalidArgument, "the " + std::string(role) + " (" + t.describe() + ") has " +
                                           std::to_string(t.numel()) + " elements; " + rule);
  }

  void op(ReduceOp op, DType dtype) const {
    if (!detail::reduces(op, dtype))
      fail(ErrorCode::InvalidArgument, std::string("avg of ") + std::string(to_string(dtype)) +
                                           ": avg takes f32, f64, f16 and bf16 (use sum)");
  }

  void rank(int value, std::string_view role) const {
    if (value < 0 || value >= comm_.size())
      fail(ErrorCode::InvalidArgument, std::string(role) + " " + std::to_string(value) +
                                           " is not a rank of this communicator (0 to " +
                                           std::to_string(comm_.size() - 1) + ")");
  }

  // Out of place: the output must not share memory with the input.
  void apart(const Tensor& input, const Tensor& output) const {
    if (!(input.storage().impl() == output.storage().impl())) return;
    const int64_t size = static_cast<int64_t>(input.element_size());
    const int64_t a0 = input.offset() * size, a1 = a0 + input.numel() * size;
    const int64_t b0 = output.offset() * static_cast<int64_t>(output.element_size()),
                  b1 = b0 + output.numel() * static_cast<int64_t>(output.element_size());
    const bool same = a0 == b0 && a1 == b1;
    if (!same && a0 < b1 && b0 < a1)
      fail(ErrorCode::InvalidArgument, "the input (" + input.describe() + ") and the output (" +
                                           output.describe() +
                                           ") overlap without being the same tensor");
  }

 private:
  const detail::CommunicatorImpl& comm_;
  Collective kind_;
};

Work submit(detail::CommunicatorImpl& comm, detail::CollectiveCall call) {
  // The output is written in place (a broadcast's root and a reduce's other ranks only read):
  // counted, so that autograd refuses a tensor saved before the collective; once the engine has
  // taken the call (one it refuses writes nothing).
  const bool root = comm.rank() == call.root;
  const bool writes = call.output.defined() && !(call.kind == Collective::broadcast && root) &&
                      !(call.kind == Collective::reduce && !root);
  const Tensor output = writes ? call.output : Tensor();
  Work work = comm.submit(call);
  if (writes) output.bump_version();
  return work;
}

std::string context_device(const Stream& stream) {
  return stream ? stream.device().id() : std::string();
}

}  // namespace

int Communicator::rank() const { return checked(impl_).rank(); }
int Communicator::size() const { return checked(impl_).size(); }
Engine Communicator::engine() const { return checked(impl_).engine(); }
const std::string& Communicator::name() const { return checked(impl_).name(); }
Device Communicator::device() const { return checked(impl_).device(); }

Work Communicator::all_reduce(const Tensor& tensor, ReduceOp op, Stream& stream) const {
  return all_reduce(tensor, tensor, op, stream);
}

Work Communicator::all_reduce(const Tensor& input, const Tensor& output, ReduceOp op,
                              Stream& stream) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::all_reduce);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "all_reduce");
  check.tensor(input, "input", stream);
  check.tensor(output, "output", stream);
  check.same_dtype(input, output);
  check.elements(output, input.numel(), "output", "it must have the input's");
  check.apart(input, output);
  check.op(op, input.dtype());
  return submit(comm, {Collective::all_reduce, input, output, op, 0, 0, stream});
}

Work Communicator::broadcast(const Tensor& tensor, int root, Stream& stream) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::broadcast);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "broadcast");
  check.tensor(tensor, "tensor", stream);
  check.rank(root, "root");
  return submit(comm, {Collective::broadcast, tensor, tensor, ReduceOp::sum, root, 0, stream});
}

Work Communicator::reduce(const Tensor& input, const Tensor& output, ReduceOp op, int root,
                          Stream& stream) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::reduce);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "reduce");
  check.rank(root, "root");
  check.tensor(input, "input", stream);
  check.op(op, input.dtype());
  if (comm.rank() == root || output.defined()) {
    check.tensor(output, "output", stream);
    check.same_dtype(input, output);
    check.elements(output, input.numel(), "output", "it must have the input's");
    check.apart(input, output);
  }
  return submit(comm, {Collective::reduce, input, output, op, root, 0, stream});
}

Work Communicator::all_gather(const Tensor& input, const Tensor& output, Stream& stream) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::all_gather);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "all_gather");
  check.tensor(input, "input", stream);
  check.tensor(output, "output", stream);
  check.same_dtype(input, output);
  check.elements(output, input.numel() * comm.size(), "output",
                 "it must have size() x the input's (" + std::to_string(comm.size()) + " x " +
                     std::to_string(input.numel()) + ")");
  check.apart(input, output);
  return submit(comm, {Collective::all_gather, input, output, ReduceOp::sum, 0, 0, stream});
}

Work Communicator::reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op,
                                  Stream& stream) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::reduce_scatter);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "reduce_scatter");
  check.tensor(input, "input", stream);
  check.tensor(output, "output", stream);
  check.same_dtype(input, output);
  check.elements(input, output.numel() * comm.size(), "input",
                 "it must have size() x the output's (" + std::to_string(comm.size()) + " x " +
                     std::to_string(output.numel()) + ")");
  check.apart(input, output);
  check.op(op, input.dtype());
  return submit(comm, {Collective::reduce_scatter, input, output, op, 0, 0, stream});
}

Work Communicator::all_to_all(const Tensor& input, const Tensor& output, Stream& stream) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::all_to_all);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "all_to_all");
  check.tensor(input, "input", stream);
  check.tensor(output, "output", stream);
  check.same_dtype(input, output);
  check.elements(output, input.numel(), "output", "it must have the input's");
  if (input.numel() % comm.size() != 0)
    check.fail(ErrorCode::InvalidArgument,
               "the input (" + input.describe() + ") has " + std::to_string(input.numel()) +
                   " elements, not a multiple of the " + std::to_string(comm.size()) + " ranks");
  if (input.storage().impl() == output.storage().impl() && input.offset() == output.offset())
    check.fail(ErrorCode::InvalidArgument, "all_to_all does not work in place");
  check.apart(input, output);
  return submit(comm, {Collective::all_to_all, input, output, ReduceOp::sum, 0, 0, stream});
}

Work Communicator::send(const Tensor& tensor, int peer, Stream& stream, int tag) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::send);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "send");
  check.tensor(tensor, "tensor", stream);
  check.rank(peer, "peer");
  if (peer == comm.rank()) check.fail(ErrorCode::InvalidArgument, "a rank cannot send to itself");
  if (tag < 0 || tag > kMaxTag)
    check.fail(
        ErrorCode::InvalidArgument,
        "tag " + std::to_string(tag) + " is out of range (0 to " + std::to_string(kMaxTag) + ")");
  return submit(comm, {Collective::send, tensor, Tensor(), ReduceOp::sum, peer, tag, stream});
}

Work Communicator::recv(const Tensor& tensor, int peer, Stream& stream, int tag) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::recv);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "recv");
  check.tensor(tensor, "tensor", stream);
  check.rank(peer, "peer");
  if (peer == comm.rank())
    check.fail(ErrorCode::InvalidArgument, "a rank cannot receive from itself");
  if (tag < 0 || tag > kMaxTag)
    check.fail(
        ErrorCode::InvalidArgument,
        "tag " + std::to_string(tag) + " is out of range (0 to " + std::to_string(kMaxTag) + ")");
  return submit(comm, {Collective::recv, Tensor(), tensor, ReduceOp::sum, peer, tag, stream});
}

Work Communicator::barrier(Stream& stream) const {
  detail::CommunicatorImpl& comm = checked(impl_);
  const CallCheck check(comm, Collective::barrier);
  check.stream(stream);
  const std::string device_id = context_device(stream);  // outlives the context
  const hal::detail::ErrorContext context(device_id, "barrier");
  return submit(comm, {Collective::barrier, Tensor(), Tensor(), ReduceOp::sum, 0, 0, stream});
}

}  // namespace hal::dist
