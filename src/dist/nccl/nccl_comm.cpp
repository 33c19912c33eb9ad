// The NCCL engine: one CUDA device per process, NCCL's collectives enqueued on the caller's own
// CUDA stream (ordered there natively), bootstrapped and checked over an MPI communicator of
// the same processes: before each collective the ranks exchange signatures through it (with
// its timeout and roll call, so a rank that never arrives is named); after, Work waits for the
// stream's event while watching NCCL's asynchronous error, and aborts the communicator when
// HAL_DIST_TIMEOUT passes (a peer stalled or died inside NCCL, which cannot say which).
#include <map>
#include <thread>
#include <utility>

#include "backends/cuda/cuda_buffer.hpp"
#include "backends/cuda/cuda_stream.hpp"
#include "core/error_context.hpp"
#include "dist/mpi/mpi_comm.hpp"
#include "dist/nccl/nccl_api.hpp"
#include "dist/nccl/nccl_types.hpp"
#include "hal/allocator.hpp"
#include "hal/units.hpp"

namespace hal::dist::detail {
namespace {

void* address(const Tensor& t) {
  if (!t.defined()) return nullptr;
  const CUdeviceptr at =
      cuda::address_of(*t.storage().impl(), static_cast<size_t>(t.offset()) * t.element_size());
  return reinterpret_cast<void*>(static_cast<uintptr_t>(at));
}

class NcclComm;

class NcclWork final : public WorkState {
 public:
  NcclWork(std::shared_ptr<NcclComm> comm, Collective kind, uint64_t sequence, Event done,
           Clock::duration patience)
      : WorkState(kind, sequence),
        comm_(std::move(comm)),
        done_(std::move(done)),
        deadline_(Clock::now() + patience),
        patience_(patience) {}

 protected:
  void poll() override;
  void drive() override {
    poll();
    if (!completed()) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

 private:
  std::shared_ptr<NcclComm> comm_;
  Event done_;
  Clock::time_point deadline_;
  Clock::duration patience_;
};

class NcclComm final : public CommunicatorImpl, public std::enable_shared_from_this<NcclComm> {
 public:
  NcclComm(const Device& device, std::shared_ptr<MpiComm> bootstrap)
      : device_(device),
        cuda_(static_cast<cuda::CudaDevice&>(*device.impl())),
        bootstrap_(std::move(bootstrap)),
        name_(bootstrap_->name() + " (nccl)") {
    // Every rank comes to the bootstrap's broadcast, one that cannot take part too: its reason
    // (no NCCL here, no unique id on rank 0) goes to the others at once, instead of leaving them
    // to time out.
    ncclUniqueId id{};
    std::exception_ptr unready;
    try {
      nccl_ = Nccl::load();
      if (bootstrap_->rank() == 0)
        nccl_->check(nccl_->ncclGetUniqueId(&id), name_, "ncclGetUniqueId");
    } catch (...) {
      unready = std::current_exception();
    }
    bootstrap_->broadcast_setup(&id, sizeof id, unready);
    cuda_.make_current();
    nccl_->check(nccl_->ncclCommInitRank(&comm_, bootstrap_->size(), id, bootstrap_->rank()),
                 name_ + " on " + device_.id(), "ncclCommInitRank");
  }
  ~NcclComm() override {
    if (aborted_ || !comm_) return;
    cuda_.make_current();
    nccl_->ncclCommDestroy(comm_);
  }

  int rank() const override { return bootstrap_->rank(); }
  int size() const override { return bootstrap_->size(); }
  Engine engine() const override { return Engine::nccl; }
  const std::string& name() const override { return name_; }
  Device device() const override { return device_; }

  Work submit(const CollectiveCall& call) override {
    const Clock::duration patience = timeout();
    if (call.stream.device().info().backend() != "cuda")
      throw Error(ErrorCode::InvalidArgument, where(call.kind) + ": the stream is not CUDA's");
    if (call.tag != 0)
      throw Error(ErrorCode::Unsupported,
                  where(call.kind) + ": tag " + std::to_string(call.tag) +
                      ": NCCL matches sends and receives by order, not by tag (use tag 0)");
    const bool p2p = call.kind == Collective::send || call.kind == Collective::recv;
    // One call at a time from the check to the enqueue: two threads of a rank whose checks met
    // in one order must enqueue in that order too, or NCCL pairs one rank's first collective
    // with another's second. (mutex_ alone would leave a gap between the two.)
    std::lock_guard in_order(submit_mutex_);
    // The ranks meet on the host first: mismatches and absent ranks are found there, named.
    if (!p2p && debug_level() != DebugLevel::off) bootstrap_->check_blocking(call);
    std::lock_guard lock(mutex_);
    if (aborted_)
      throw Error(ErrorCode::InvalidState, where(call.kind) + ": the communicator was aborted");
    // Numbered as the MPI engine numbers them: collectives in one sequence, sends and receives
    // per peer, so "#n" in an error means the same call on every rank.
    const uint64_t sequence =
        p2p ? ++pairs_[{static_cast<int>(call.kind), call.root}] : ++collectives_;
    enqueue(call);
    Stream stream = call.stream;
    // NCCL reads and writes raw addresses, which hold nothing: the tensors' memory is kept until
    // the work enqueued so far completes, though the caller drops them at once.
    for (const Tensor* t : {&call.input, &call.output})
      if (t->defined()) record_stream(t->storage(), stream);
    Event done = stream.record();
    return Work(
        std::make_shared<NcclWork>(shared_from_this(), call.kind, sequence, done, patience));
  }

  // Called by NcclWork::poll: the communicator's asynchronous error, or none.
  ncclResult_t async_error() {
    std::lock_guard lock(mutex_);
    if (aborted_) return ncclSuccess;
    ncclResult_t result = ncclSuccess;
    nccl_->ncclCommGetAsyncError(comm_, &result);
    return result;
  }
  void abort() {
    std::lock_guard lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    cuda_.make_current();
    nccl_->ncclCommAbort(comm_);
  }
  std::string where(Collective kind) const {
    return std::string(to_string(kind)) + " on communicator '" + name_ + "' (rank " +
           std::to_string(rank()) + " of " + std::to_string(size()) + ", " + device_.id() + ")";
  }
  const Nccl& nccl() const { return *nccl_; }

 private:
  void enqueue(const CollectiveCall& call) {
    cuda_.make_current();
    const CUstream stream = static_cast<cuda::CudaStream&>(*call.stream.impl()).native();
    const Tensor& t = call.input.defined() ? call.input : call.output;
    const ncclDataType_t type = t.defined() ? nccl_dtype(t.dtype()) : ncclInt32;
    const ncclRedOp_t op = t.defined() ? nccl_op(call.op, t.dtype()) : ncclSum;
    const size_t count = t.defined() ? static_cast<size_t>(t.numel()) : 0;
    void* in = address(call.input);
    void* out = address(call.output);
    const std::string where_text = where(call.kind);
    ncclResult_t result = ncclSuccess;
    switch (call.kind) {
      case Collective::all_reduce:
        result = nccl_->ncclAllReduce(in, out, count, type, op, comm_, stream);
        break;
      case Collective::broadcast:
        result = nccl_->ncclBroadcast(out, out, count, type, call.root, comm_, stream);
        break;
      case Collective::reduce:
        result = nccl_->ncclReduce(in, out ? out : in, count, type, op, call.root, comm_, stream);
        break;
      case Collective::all_gather:
        result = nccl_->ncclAllGather(in, out, count, type, comm_, stream);
        break;
      case Collective::reduce_scatter:
        result = nccl_->ncclReduceScatter(in, out, static_cast<size_t>(call.output.numel()), type,
                                          op, comm_, stream);
        break;
      case Collective::all_to_all: {
        const size_t chunk = count / static_cast<size_t>(size());
        const size_t bytes = chunk * t.element_size();
        nccl_->check(nccl_->ncclGroupStart(), where_text, "ncclGroupStart");
        for (int peer = 0; peer < size() && result == ncclSuccess; ++peer) {
          result = nccl_->ncclSend(static_cast<char*>(in) + bytes * peer, chunk, type, peer, comm_,
                                   stream);
          if (result == ncclSuccess)
            result = nccl_->ncclRecv(static_cast<char*>(out) + bytes * peer, chunk, type, peer,
                                     comm_, stream);
        }
        const ncclResult_t ended = nccl_->ncclGroupEnd();
        if (result == ncclSuccess) result = ended;
        break;
      }
      case Collective::send:
        result = nccl_->ncclSend(in, count, type, call.root, comm_, stream);
        break;
      case Collective::recv:
        result = nccl_->ncclRecv(out, count, type, call.root, comm_, stream);
        break;
      case Collective::barrier: {
        if (!barrier_.defined()) barrier_ = empty({1}, DType::i32, device_);
        void* flag = address(barrier_);
        result = nccl_->ncclAllReduce(flag, flag, 1, ncclInt32, ncclSum, comm_, stream);
        break;
      }
    }
    nccl_->check(result, where_text, "enqueueing it");
  }

  std::shared_ptr<const Nccl> nccl_;
  Device device_;
  cuda::CudaDevice& cuda_;
  std::shared_ptr<MpiComm> bootstrap_;
  std::string name_;
  std::mutex submit_mutex_;  // taken before mutex_, never while holding it
  std::mutex mutex_;         // NCCL takes one call on a communicator at a time
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  uint64_t collectives_ = 0;
  std::map<std::pair<int, int>, uint64_t> pairs_;  // (send or recv, peer) -> calls so far
  Tensor barrier_;
};

void NcclWork::poll() {
  if (completed()) return;
  if (done_.query()) return finish();
  const ncclResult_t result = comm_->async_error();
  const hal::detail::ErrorContext context(comm_->device().id(), to_string(kind()));
  if (result != ncclSuccess && result != ncclInProgress) {
    comm_->abort();
    return finish(std::make_exception_ptr(
        Error(error_code(result),
              comm_->where(kind()) + " #" + std::to_string(sequence()) + " failed inside NCCL: " +
                  comm_->nccl().describe(result) + "; the communicator is aborted",
              static_cast<int>(result))));
  }
  if (Clock::now() < deadline_) return;
  comm_->abort();
  finish(std::make_exception_ptr(Error(
      ErrorCode::Timeout,
      comm_->where(kind()) + " #" + std::to_string(sequence()) + " did not complete within " +
          format_seconds(std::chrono::duration<double>(patience_).count()) +
          " (HAL_DIST_TIMEOUT): a peer stalled or died inside NCCL, which does not say which; "
          "the communicator is aborted")));
}

}  // namespace
}  // namespace hal::dist::detail

namespace hal::dist {

Communicator Communicator::nccl(const Device& device, const Communicator& bootstrap) {
  if (!device || device.info().backend() != "cuda")
    throw Error(ErrorCode::InvalidArgument,
                "Communicator::nccl: " + (device ? device.id() : std::string("an empty Device")) +
                    " is not a CUDA device");
  auto mpi = std::dynamic_pointer_cast<detail::MpiComm>(bootstrap.impl());
  if (!mpi)
    throw Error(
        ErrorCode::InvalidArgument,
        "Communicator::nccl: the bootstrap communicator must be an MPI one (" +
            (bootstrap ? std::string(to_string(bootstrap.engine())) : std::string("empty")) +
            " given)");
  return Communicator(std::make_shared<detail::NcclComm>(device, mpi));
}

bool nccl_available(std::string* why) {
  try {
    detail::Nccl::load();
    return true;
  } catch (const Error& error) {
    if (why) *why = error.message();
    return false;
  }
}

}  // namespace hal::dist
