#include "backends/cuda/cuda_stream.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <future>

#include "backends/cuda/cuda_buffer.hpp"
#include "backends/cuda/cuda_event.hpp"
#include "backends/cuda/cuda_graph.hpp"
#include "backends/cuda/cuda_staging.hpp"
#include "hal/log.hpp"

namespace hal::cuda {
namespace {

// One host callback on its way from the driver's host-function thread to the stream's own.
struct HostCall {
  std::function<void()> fn;
  std::shared_ptr<async::WorkQueue> thread;
  std::shared_ptr<void> flag_owner;  // keeps `flag` while the call is on its way
  uint32_t* flag = nullptr;          // null: the driver's thread waits for the call instead
  uint32_t number = 0;
  std::shared_ptr<detail::StreamFailures> failures;
  uint64_t position = 0;  // among the stream's host callbacks

  // Runs fn; a failure is kept for the records after the call before the stream goes on (the
  // work queue keeps the exception for the stream's synchronize).
  void run() {
    try {
      fn();
    } catch (...) {
      failures->failed(position, std::current_exception());
      throw;
    }
  }
};

// Hands the call to the stream's thread and returns: the stream waits on the flag, which the
// thread sets to the call's number once it has returned (thrown too: the work queue keeps the
// exception for the stream's synchronize).
void CUDA_CB post_host_call(void* user) {
  std::shared_ptr<HostCall> call(static_cast<HostCall*>(user));
  // Moved into the task: what the call holds (the flag's pinned memory among it) is released on
  // the stream's thread, never here, where the driver forbids CUDA calls.
  const std::shared_ptr<async::WorkQueue> thread = call->thread;
  thread->push([call = std::move(call)] {
    struct Release {
      HostCall& call;
      ~Release() {
        std::atomic_ref<uint32_t>(*call.flag).store(call.number, std::memory_order_release);
      }
    } release{*call};
    call->run();
  });
}

// By default callbacks leave the driver's thread at once and the stream waits on a flag, so
// that a callback that waits (for another stream, say) holds no other stream's host work.
// HAL_CUDA_HOST_CALLS=blocking: the driver's thread waits for each callback, as before.
bool posted_host_calls() {
  static const bool posted = [] {
    const char* value = std::getenv("HAL_CUDA_HOST_CALLS");
    return !(value && std::string_view(value) == "blocking");
  }();
  return posted;
}

void CUDA_CB run_host_call(void* user) {
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(user));
  std::promise<void> returned;
  std::future<void> done = returned.get_future();
  call->thread->push([&call, &returned] {
    struct Signal {
      std::promise<void>& promise;
      ~Signal() { promise.set_value(); }
    } signal{returned};
    call->run();  // an exception is kept by the work queue for the stream's synchronize
  });
  done.wait();  // the stream's later work stays behind the callback
}

// One chunk of a staged copy between pinned and pageable memory, which the driver's
// host-function thread runs in the stream's order (a memcpy: the driver forbids CUDA calls
// there). It deletes itself once it has run; the stream keeps the pinned block.
struct HostCopy {
  void* to;
  const void* from;
  size_t bytes;
};

void CUDA_CB run_host_copy(void* user) {
  std::unique_ptr<HostCopy> copy(static_cast<HostCopy*>(user));
  std::memcpy(copy->to, copy->from, copy->bytes);
}

// The most a staged copy pins: a larger copy goes through its block a chunk at a time, which
// the stream's order makes safe (a chunk's DMA has run before the next chunk's memcpy).
constexpr size_t kStagingChunkBytes = size_t{8} << 20;

bool overlaps(CUdeviceptr a, CUdeviceptr b, size_t bytes) { return a < b + bytes && b < a + bytes; }

}  // namespace

// A word of pinned host memory the GPU reads (mapped), freed with the last call that holds it.
struct CudaStream::HostFlag {
  std::shared_ptr<CudaDevice> device;
  uint32_t* host = nullptr;
  CUdeviceptr address = 0;
  ~HostFlag() {
    try {
      device->make_current();
      device->api().cuMemFreeHost(host);
    } catch (const Error&) {
    }
  }
};

CudaStream::CudaStream(std::shared_ptr<CudaDevice> device)
    : device_(std::move(device)), api_(device_->api()), refs_(CuFences{&api_}) {
  device_->make_current();
  api_.check(api_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), describe(*device_),
             "cuStreamCreate");
}

CudaStream::~CudaStream() {
  try {
    device_->make_current();
  } catch (const Error&) {
    return;  // the driver is gone: so are the stream and its events
  }
  api_.cuStreamSynchronize(stream_);
  if (spans_) {
    spans_->collect();
    spans_.reset();
  }
  Batches batches;
  std::vector<Ref> open;
  refs_.take_all(batches, open);
  refs_.release(batches);
  refs_.destroy_spares();
  if (blas_) cublas_->cublasDestroy_v2(blas_);
  api_.cuStreamDestroy(stream_);
  if (callbacks_) callbacks_->wait_all();
}

std::string CudaStream::where(std::string_view operation) const {
  return "stream of " + describe(*device_) + ": " + std::string(operation);
}

void CudaStream::fail(CUresult result, std::string_view operation, std::string_view call,
                      size_t bytes) const {
  api_.throw_result(result, where(operation),
                    std::string(call) + (bytes ? " of " + std::to_string(bytes) + " bytes" : ""));
}

void CudaStream::refuse_while_capturing(std::string_view operation) const {
  if (capture_)
    throw Error(ErrorCode::InvalidState,
                where(operation) + ": the stream is capturing a graph; call end_capture() first");
}

void CudaStream::fence_open_batch() {
  CUevent fence = refs_.take_spare();
  CUresult result = fence ? CUDA_SUCCESS : api_.cuEventCreate(&fence, CU_EVENT_DISABLE_TIMING);
  if (result == CUDA_SUCCESS) result = api_.cuEventRecord(fence, stream_);
  if (result != CUDA_SUCCESS) {
    if (fence) api_.cuEventDestroy(fence);
    fail(result, "fence", "cuEventCreate / cuEventRecord");
  }
  refs_.close(fence);
}

void CudaStream::enqueue_blas(std::vector<Ref> refs, std::string_view what, const BlasCall& call) {
  Batches done;
  {
    std::lock_guard lock(mutex_);
    device_->make_current();
    if (!blas_) {
      auto cublas = Cublas::load();
      // NVIDIA's advice for the workspace: 32 MiB on Hopper and later, 4 MiB before.
      const size_t workspace_bytes = (device_->traits().arch >= 90 ? 32 : 4) << 20;
      BufferPtr workspace = device_->allocate(workspace_bytes, MemoryKind::device);
      cublasHandle_t handle = nullptr;
      cublas->check(cublas->cublasCreate_v2(&handle), where(what), "cublasCreate");
      cublasStatus_t status = cublas->cublasSetStream_v2(handle, stream_);
      if (status == CUBLAS_STATUS_SUCCESS)
        status = cublas->cublasSetWorkspace_v2(
            handle, reinterpret_cast<void*>(address_of(*workspace)), workspace_bytes);
      // f16 and bf16 products accumulate in f32 throughout: by default cuBLAS may reduce split-K
      // partial sums in the output's own type.
      if (status == CUBLAS_STATUS_SUCCESS) status = cublas->cublasSetMathMode(handle, kMathMode);
      if (status != CUBLAS_STATUS_SUCCESS) {
        cublas->cublasDestroy_v2(handle);
        cublas->throw_status(status, where(what),
                             "cublasSetStream / cublasSetWorkspace / cublasSetMathMode");
      }
      cublas_ = std::move(cublas);
      blas_ = handle;
      blas_workspace_ = std::move(workspace);
    }
    const auto enqueue = [&] { return call(*cublas_, blas_); };
    cublas_->check(timed_enqueue(CommandSpan{"kernel", what, {}}, enqueue, CUBLAS_STATUS_SUCCESS),
                   where(what), "cuBLAS");
    auto each_object = [&](auto&& keep) {
      for (const Ref& ref : refs) keep(ref);
    };
    keep_objects(each_object, done);
  }
  refs_.release(done);
}

void CudaStream::gemm(const GemmDesc& g) {
  const GemmTypes types = gemm_types(g.dtype);
  const auto pointer = [&types](const GemmOperand& operand) {
    return reinterpret_cast<void*>(address_of(*operand.buffer, operand.offset * types.bytes));
  };
  void* a = pointer(g.a);
  void* b = pointer(g.b);
  void* c = pointer(g.c);
  const std::string what = "gemm " + std::string(to_string(g.dtype)) + " " + std::to_string(g.m) +
                           "x" + std::to_string(g.k) + " @ " + std::to_string(g.k) + "x" +
                           std::to_string(g.n) + " (batch " + std::to_string(g.batch) + ")";
  // cuBLAS is column-major: the row-major C = A B is, read column-major, C^T = B^T A^T, so
  // B comes first and the sizes swap. Alpha and beta have the compute type's precision.
  enqueue_blas({g.a.buffer, g.b.buffer, g.c.buffer}, what, [&](const Cublas& blas, auto handle) {
    const bool f64 = types.compute == CUBLAS_COMPUTE_64F;
    const double one = 1.0, zero = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    return blas.cublasGemmStridedBatchedEx(
        handle, g.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
        g.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(g.n), static_cast<int>(g.m),
        static_cast<int>(g.k), f64 ? static_cast<const void*>(&one) : &one_f, b, types.element,
        static_cast<int>(g.b.ld), g.b.batch_stride, a, types.element, static_cast<int>(g.a.ld),
        g.a.batch_stride, f64 ? static_cast<const void*>(&zero) : &zero_f, c, types.element,
        static_cast<int>(g.c.ld), g.c.batch_stride, static_cast<int>(g.batch), types.compute,
        CUBLAS_GEMM_DEFAULT);
  });
}

// Pageable host memory is staged (cuda_staging.hpp): the driver would read a pageable source
// at once, before earlier work (a host callback that writes it, say) has run, and return from a
// copy into pageable memory only once it has run (behind a held host callback: never).
void CudaStream::copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                                size_t bytes) {
  const CUdeviceptr to = address_of(*dst, dst_offset);
  std::shared_ptr<void> block;  // a staged copy's, kept until the copy has run
  submit(
      "copy_from_host", "cuMemcpyHtoDAsync", bytes,
      [&] {
        // On an idle stream the driver's read at once is the read in the stream's order, and its
        // own staging overlaps the host's copy with the DMA, where hal's runs them in turn.
        if (!stages(src, bytes) || api_.cuStreamQuery(stream_) == CUDA_SUCCESS)
          return api_.cuMemcpyHtoDAsync(to, src, bytes, stream_);
        return staged_copy(to, const_cast<void*>(src), bytes, true, block);
      },
      dst);
  if (block) keep_until_done(std::move(block));
}

void CudaStream::copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) {
  const CUdeviceptr from = address_of(*src, src_offset);
  std::shared_ptr<void> block;
  submit(
      "copy_to_host", "cuMemcpyDtoHAsync", bytes,
      [&] {
        if (!stages(dst, bytes)) return api_.cuMemcpyDtoHAsync(dst, from, bytes, stream_);
        return staged_copy(from, dst, bytes, false, block);
      },
      src);
  if (block) keep_until_done(std::move(block));
}

bool CudaStream::stages(const void* host, size_t bytes) const {
  return bytes > 0 && !capture_ && !device_->staging().pinned(host);
}

CUresult CudaStream::staged_copy(CUdeviceptr device, void* host, size_t bytes, bool to_device,
                                 std::shared_ptr<void>& block_owner) {
  block_owner = device_->staging().take(std::min(bytes, kStagingChunkBytes));
  void* const block = block_owner.get();
  auto* host_bytes = static_cast<unsigned char*>(host);
  for (size_t done = 0; done < bytes;) {
    const size_t chunk = std::min(bytes - done, kStagingChunkBytes);
    auto copy = std::make_unique<HostCopy>(to_device ? HostCopy{block, host_bytes + done, chunk}
                                                     : HostCopy{host_bytes + done, block, chunk});
    CUresult result =
        to_device ? CUDA_SUCCESS : api_.cuMemcpyDtoHAsync(block, device + done, chunk, stream_);
    if (result == CUDA_SUCCESS) result = api_.cuLaunchHostFunc(stream_, &run_host_copy, copy.get());
    if (result == CUDA_SUCCESS) {
      copy.release();  // run_host_copy owns it now
      if (to_device) result = api_.cuMemcpyHtoDAsync(device + done, block, chunk, stream_);
    }
    if (result != CUDA_SUCCESS) {
      // The caller drops the block when the failure is thrown: first let what is already
      // enqueued, which uses it, run.
      api_.cuStreamSynchronize(stream_);
      return result;
    }
    done += chunk;
  }
  return CUDA_SUCCESS;
}

bool CudaStream::copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src,
                      size_t src_offset, size_t bytes) {
  auto& dst_device = static_cast<const CudaDevice&>(dst->device());
  auto& src_device = static_cast<const CudaDevice&>(src->device());
  const CUdeviceptr to = address_of(*dst, dst_offset);
  const CUdeviceptr from = address_of(*src, src_offset);
  if (&dst_device != &src_device) {
    // Direct over NVLink or PCIe where peer access is possible, staged by the driver otherwise.
    const CUcontext dst_context = dst_device.context(), src_context = src_device.context();
    submit(
        "copy between devices", "cuMemcpyPeerAsync", bytes,
        [&] { return api_.cuMemcpyPeerAsync(to, dst_context, from, src_context, bytes, stream_); },
        dst, src);
    return true;
  }
  if (!overlaps(to, from, bytes)) {
    submit(
        "copy", "cuMemcpyDtoDAsync", bytes,
        [&] { return api_.cuMemcpyDtoDAsync(to, from, bytes, stream_); }, dst, src);
    return true;
  }
  // cuMemcpy leaves overlapping copies undefined: go through scratch memory, freed once both
  // copies have run (its owner is dropped with their batch).
  device_->make_current();
  CUdeviceptr scratch = 0;
  const CUresult result = api_.cuMemAlloc(&scratch, bytes);
  if (result != CUDA_SUCCESS) fail(result, "copy", "cuMemAlloc (overlap scratch)", bytes);
  auto device = device_;
  Ref owner(reinterpret_cast<const void*>(scratch), [device, scratch](const void*) {
    try {
      device->make_current();
      device->api().cuMemFree(scratch);
    } catch (const Error&) {
    }
  });
  submit(
      "copy", "cuMemcpyDtoDAsync", bytes,
      [&] {
        CUresult status = api_.cuMemcpyDtoDAsync(scratch, from, bytes, stream_);
        return status == CUDA_SUCCESS ? api_.cuMemcpyDtoDAsync(to, scratch, bytes, stream_)
                                      : status;
      },
      dst, src, owner);
  return true;
}

void CudaStream::fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
                      size_t pattern_size) {
  const CUdeviceptr to = address_of(*dst, dst_offset);
  if (pattern_size <= 4 && to % pattern_size == 0) {
    uint32_t value = 0;
    std::memcpy(&value, pattern, pattern_size);
    submit(
        "fill", "cuMemsetD*Async", bytes,
        [&] {
          switch (pattern_size) {
            case 1:
              return api_.cuMemsetD8Async(to, static_cast<unsigned char>(value), bytes, stream_);
            case 2:
              return api_.cuMemsetD16Async(to, static_cast<unsigned short>(value), bytes / 2,
                                           stream_);
            default:
              return api_.cuMemsetD32Async(to, value, bytes / 4, stream_);
          }
        },
        dst);
    return;
  }
  // 8- and 16-byte patterns, and unaligned ones: write the repeated pattern from the host.
  auto data = std::make_shared<std::vector<unsigned char>>(bytes);
  for (size_t at = 0; at < bytes; at += pattern_size)
    std::memcpy(data->data() + at, pattern, pattern_size);
  submit(
      "fill", "cuMemcpyHtoDAsync", bytes,
      [&] { return api_.cuMemcpyHtoDAsync(to, data->data(), bytes, stream_); }, dst, data);
}

void CudaStream::host_callback(std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  refuse_while_capturing("host_callback");
  device_->make_current();
  if (!callbacks_) callbacks_ = std::make_shared<async::WorkQueue>();
  if (!host_flag_tried_) {
    host_flag_tried_ = true;
    if (posted_host_calls()) host_flag_ = make_host_flag();
  }
  if (!host_flag_) {  // the driver's thread waits for the call
    auto call = std::make_unique<HostCall>(
        HostCall{std::move(fn), callbacks_, nullptr, nullptr, 0, failures_, ++callbacks_enqueued_});
    const CUresult result = api_.cuLaunchHostFunc(stream_, &run_host_call, call.get());
    if (result != CUDA_SUCCESS) fail(result, "host_callback", "cuLaunchHostFunc");
    call.release();  // run_host_call owns it now
    refs_.add_command();
    return;
  }
  const uint32_t number = ++host_calls_;
  auto call =
      std::make_unique<HostCall>(HostCall{std::move(fn), callbacks_, host_flag_, host_flag_->host,
                                          number, failures_, ++callbacks_enqueued_});
  CUresult result = api_.cuLaunchHostFunc(stream_, &post_host_call, call.get());
  if (result != CUDA_SUCCESS) {
    --host_calls_;
    fail(result, "host_callback", "cuLaunchHostFunc");
  }
  call.release();  // post_host_call owns it now
  // GEQ compares cyclically: the count may wrap.
  result = api_.cuStreamWaitValue32(stream_, host_flag_->address, number, CU_STREAM_WAIT_VALUE_GEQ);
  if (result != CUDA_SUCCESS)  // the callback is enqueued, and later work would not wait for it
    fail(result, "host_callback", "cuStreamWaitValue32 (the stream no longer waits for callbacks)");
  refs_.add_command();
}

// Under mutex_, the context current: the flag, or null where the driver refuses a wait on it
// (the wait probed here is satisfied at once).
std::shared_ptr<CudaStream::HostFlag> CudaStream::make_host_flag() {
  void* memory = nullptr;
  if (api_.cuMemHostAlloc(&memory, sizeof(uint32_t),
                          CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
    return nullptr;
  auto flag = std::make_shared<HostFlag>();
  flag->device = device_;
  flag->host = static_cast<uint32_t*>(memory);
  *flag->host = 0;
  if (api_.cuMemHostGetDevicePointer(&flag->address, memory, 0) != CUDA_SUCCESS ||
      api_.cuStreamWaitValue32(stream_, flag->address, 0, CU_STREAM_WAIT_VALUE_GEQ) !=
          CUDA_SUCCESS) {
    log(LogLevel::info, where("host_callback") +
                            ": the driver refuses cuStreamWaitValue32 on pinned memory; host "
                            "callbacks hold the driver's host-function thread");
    return nullptr;
  }
  return flag;
}

void CudaStream::keep_until_done(std::shared_ptr<const void> value) {
  Batches done;
  {
    std::lock_guard lock(mutex_);
    device_->make_current();  // a full batch is fenced here: cuEventRecord needs the context
    // In the open batch: released once a fence after it has passed.
    auto each_object = [&](auto&& keep) { keep(value); };
    keep_objects(each_object, done);
  }
  refs_.release(done);
}

void CudaStream::record(EventImpl& event) {
  auto fence = std::make_shared<CudaFence>(device_, true, serial());
  {
    std::lock_guard lock(mutex_);
    device_->make_current();
    const CUresult result = api_.cuEventRecord(fence->native(), stream_);
    if (result != CUDA_SUCCESS) fail(result, "record", "cuEventRecord");
    fence->cover_callbacks(failures_->mark(callbacks_enqueued_));
    if (refs_.has_open_commands() && !capture_) fence_open_batch();
  }
  static_cast<CudaEvent&>(event).set_fence(std::move(fence));
}

void CudaStream::wait(EventImpl& event) {
  std::shared_ptr<CudaFence> fence = static_cast<CudaEvent&>(event).cuda_fence();
  // Events of other CUDA devices too: the driver orders the streams on the device.
  submit(
      "wait", "cuStreamWaitEvent", 0,
      [&] { return api_.cuStreamWaitEvent(stream_, fence->native(), 0); }, fence);
}

void CudaStream::synchronize() {
  Batches batches;
  std::vector<Ref> open;
  std::shared_ptr<async::WorkQueue> callbacks;
  {
    std::lock_guard lock(mutex_);
    refuse_while_capturing("synchronize");
    refs_.take_all(batches, open);
    callbacks = callbacks_;
  }
  device_->make_current();
  CUresult failed = api_.cuStreamSynchronize(stream_);
  if (callbacks) callbacks->wait_all();
  if (failed == CUDA_SUCCESS) failed = refs_.first_failure(batches);
  refs_.release(batches);
  open.clear();
  {
    std::lock_guard lock(mutex_);
    const CUresult earlier = refs_.take_failure();
    if (failed == CUDA_SUCCESS) failed = earlier;
    if (spans_) spans_->collect();  // every traced command has run: a stopped trace has them
  }
  if (failed != CUDA_SUCCESS)
    throw Error(ErrorCode::AsyncFailure,
                "work enqueued on a stream of " + describe(*device_) + " failed: " +
                    api_.describe(failed) + " (" + std::to_string(static_cast<int>(failed)) + ")",
                static_cast<int>(failed));
  if (callbacks)
    if (std::exception_ptr error = callbacks->take_error()) {
      failures_->reported();
      throw_async_failure(*device_, error);
    }
}

bool CudaStream::query() {
  Batches done;
  bool idle = false;
  {
    std::lock_guard lock(mutex_);
    refuse_while_capturing("query");
    device_->make_current();
    if (refs_.has_open_commands()) fence_open_batch();
    refs_.take_completed(done);
    idle = refs_.idle();
    if (spans_) spans_->collect();
  }
  refs_.release(done);
  return idle;
}

void CudaStream::begin_capture() {
  std::lock_guard lock(mutex_);
  refuse_while_capturing("begin_capture");
  device_->make_current();
  if (refs_.has_open_commands()) fence_open_batch();  // work before the capture keeps its own fence
  // Relaxed: the caching allocator may call cuMemAlloc from this thread during the capture.
  const CUresult result = api_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED);
  if (result != CUDA_SUCCESS) fail(result, "begin_capture", "cuStreamBeginCapture");
  capture_ = std::make_unique<std::vector<Ref>>();
}

std::shared_ptr<GraphImpl> CudaStream::end_capture() {
  std::lock_guard lock(mutex_);
  if (!capture_)
    throw Error(ErrorCode::InvalidState,
                where("end_capture") + ": the stream is not capturing; call begin_capture() first");
  device_->make_current();
  std::unique_ptr<std::vector<Ref>> refs = std::move(capture_);
  CUgraph graph = nullptr;
  CUresult result = api_.cuStreamEndCapture(stream_, &graph);
  // A capture the driver invalidated (an operation it cannot capture) ends here with its error.
  if (result != CUDA_SUCCESS) fail(result, "end_capture", "cuStreamEndCapture");
  size_t nodes = 0;
  api_.cuGraphGetNodes(graph, nullptr, &nodes);
  CUgraphExec exec = nullptr;
  result = api_.cuGraphInstantiateWithFlags(&exec, graph, 0);
  if (result != CUDA_SUCCESS) {
    api_.cuGraphDestroy(graph);
    fail(result, "end_capture", "cuGraphInstantiateWithFlags");
  }
  return std::make_shared<CudaGraph>(device_, graph, exec, nodes, std::move(*refs));
}

void CudaStream::launch_graph(const std::shared_ptr<GraphImpl>& graph) {
  CUgraphExec exec = static_cast<const CudaGraph&>(*graph).native();
  submit(
      "launch of a graph", "cuGraphLaunch", 0, [&] { return api_.cuGraphLaunch(exec, stream_); },
      graph);
}

}  // namespace hal::cuda
