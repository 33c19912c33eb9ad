#include "backends/opencl/opencl_stream.hpp"

#ifdef HAL_HAVE_CLBLAST
#include "backends/opencl/clblast.hpp"
#endif

#include <cstring>

#include "backends/opencl/opencl_buffer.hpp"
#include "backends/opencl/opencl_event.hpp"

namespace hal::opencl {
namespace {

// One host callback on its way from the driver's thread to the stream's callback thread. Its
// gate, a user event, holds the queue's later commands until the callback has run.
struct PendingCallback {
  PendingCallback(std::shared_ptr<OpenClDevice> device_, std::function<void()> fn_, cl_event gate_,
                  std::shared_ptr<async::WorkQueue> thread_,
                  std::shared_ptr<detail::StreamFailures> failures_, uint64_t position_)
      : device(std::move(device_)),
        fn(std::move(fn_)),
        gate(gate_),
        thread(std::move(thread_)),
        failures(std::move(failures_)),
        position(position_) {}
  ~PendingCallback() { open_gate(); }

  void open_gate() {
    if (!gate) return;
    device->api().clSetUserEventStatus(gate, CL_COMPLETE);
    device->api().clReleaseEvent(gate);
    gate = nullptr;
  }
  // Before the gate opens: a record after the callback carries the failure once it completes.
  [[noreturn]] void fail() {
    failures->failed(position, std::current_exception());
    open_gate();
    throw;
  }

  std::shared_ptr<OpenClDevice> device;
  std::function<void()> fn;
  cl_event gate;
  std::shared_ptr<async::WorkQueue> thread;
  std::shared_ptr<detail::StreamFailures> failures;
  uint64_t position;  // among the stream's host callbacks
};

// Runs on the driver's thread: only hands the callback over.
void CL_CALLBACK on_marker_complete(cl_event marker, cl_int status, void* user) {
  std::shared_ptr<PendingCallback> pending(static_cast<PendingCallback*>(user));
  pending->device->api().clReleaseEvent(marker);
  // The task must not own the queue that runs it: its last owner would join its own thread.
  std::shared_ptr<async::WorkQueue> thread = std::move(pending->thread);
  thread->push([pending = std::move(pending), status] {
    try {
      if (status != CL_COMPLETE)
        throw Error(
            ErrorCode::AsyncFailure,
            "a host callback was skipped: the work before it failed with " + status_name(status));
      pending->fn();
    } catch (...) {
      pending->fail();
    }
    pending->open_gate();
  });
}

bool overlaps(size_t a, size_t b, size_t bytes) { return a < b + bytes && b < a + bytes; }

}  // namespace

OpenClStream::OpenClStream(std::shared_ptr<OpenClDevice> device)
    : device_(std::move(device)),
      api_(device_->api()),
      queue_(device_->create_queue()),
      refs_(ClFences{&api_}) {}

OpenClStream::~OpenClStream() {
  api_.clFinish(queue_);
  wait_for_spans(device_spans_);
  Batches batches;
  std::vector<Ref> open;
  refs_.take_all(batches, open);
  refs_.release(batches);
  api_.clReleaseCommandQueue(queue_);
  if (callbacks_) callbacks_->wait_all();
}

std::string OpenClStream::where(std::string_view operation) const {
  return "stream of " + describe(*device_) + ": " + std::string(operation);
}

void OpenClStream::fail(cl_int status, std::string_view operation, std::string_view call,
                        size_t bytes) const {
  throw_status(status, where(operation),
               std::string(call) + (bytes ? " of " + std::to_string(bytes) + " bytes" : ""));
}

cl_event OpenClStream::fence_open_batch(bool keep_event) {
  cl_event marker = nullptr;
  cl_int status = api_.clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &marker);
  if (status != CL_SUCCESS) fail(status, "fence", "clEnqueueMarkerWithWaitList");
  if (keep_event) api_.clRetainEvent(marker);
  refs_.close(marker);
  return keep_event ? marker : nullptr;
}

#ifdef HAL_HAVE_CLBLAST
void OpenClStream::gemm(const GemmDesc& g) {
  const Clblast& blas = Clblast::load();
  const bool f64 = g.dtype == DType::f64;
  const size_t element = f64 ? 8 : 4;
  const ClRegion a = region_of(*g.a.buffer, g.a.offset * element);
  const ClRegion b = region_of(*g.b.buffer, g.b.offset * element);
  const ClRegion c = region_of(*g.c.buffer, g.c.offset * element);
  const auto transpose = [](const GemmOperand& operand) {
    return operand.transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
  };
  const auto m = static_cast<size_t>(g.m), n = static_cast<size_t>(g.n),
             k = static_cast<size_t>(g.k), batch = static_cast<size_t>(g.batch);
  const auto ld = [](const GemmOperand& operand) { return static_cast<size_t>(operand.ld); };
  const auto stride = [](const GemmOperand& operand) {
    return static_cast<size_t>(operand.batch_stride);
  };
  // One CLBlast{S,D}gemm per matrix of the batch: CLBlast 1.5's GemmStridedBatched (Debian 12)
  // returns wrong products on PoCL for sizes such as 768 and 1024 (batched or not), where
  // Xgemm with the same offsets is right; tests/opencl checks those sizes against OpenBLAS.
  submit({g.a.buffer, g.b.buffer, g.c.buffer}, [&] {
    cl_command_queue queue = queue_;
    CLBlastStatusCode status = CLBlastSuccess;
    for (size_t i = 0; i < batch && status == CLBlastSuccess; ++i) {
      const size_t at_a = a.offset / element + i * stride(g.a),
                   at_b = b.offset / element + i * stride(g.b),
                   at_c = c.offset / element + i * stride(g.c);
      status = f64 ? blas.dgemm(CLBlastLayoutRowMajor, transpose(g.a), transpose(g.b), m, n, k, 1.0,
                                a.mem, at_a, ld(g.a), b.mem, at_b, ld(g.b), 0.0, c.mem, at_c,
                                ld(g.c), &queue, nullptr)
                   : blas.sgemm(CLBlastLayoutRowMajor, transpose(g.a), transpose(g.b), m, n, k,
                                1.0f, a.mem, at_a, ld(g.a), b.mem, at_b, ld(g.b), 0.0f, c.mem, at_c,
                                ld(g.c), &queue, nullptr);
    }
    if (status != CLBlastSuccess)
      throw Error(status == CLBlastNoDoublePrecision ? ErrorCode::Unsupported : ErrorCode::Internal,
                  where("gemm") + " " + std::string(to_string(g.dtype)) + " " + std::to_string(m) +
                      "x" + std::to_string(k) + " @ " + std::to_string(k) + "x" +
                      std::to_string(n) + ": CLBlast failed: " + describe(status),
                  static_cast<int>(status));
  });
}

#endif  // HAL_HAVE_CLBLAST

void OpenClStream::copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                                  size_t bytes) {
  const ClRegion to = region_of(*dst, dst_offset);
  submit({dst}, [&] {
    DeviceSpan span(*this, device_spans_, "copy", "copy_from_host",
                    trace::detail::transfer_args(bytes));
    cl_int status = api_.clEnqueueWriteBuffer(queue_, to.mem, CL_FALSE, to.offset, bytes, src, 0,
                                              nullptr, span.event());
    if (status != CL_SUCCESS) fail(status, "copy_from_host", "clEnqueueWriteBuffer", bytes);
    span.enqueued(api_);
  });
}

void OpenClStream::copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) {
  const ClRegion from = region_of(*src, src_offset);
  submit({src}, [&] {
    DeviceSpan span(*this, device_spans_, "copy", "copy_to_host",
                    trace::detail::transfer_args(bytes));
    cl_int status = api_.clEnqueueReadBuffer(queue_, from.mem, CL_FALSE, from.offset, bytes, dst, 0,
                                             nullptr, span.event());
    if (status != CL_SUCCESS) fail(status, "copy_to_host", "clEnqueueReadBuffer", bytes);
    span.enqueued(api_);
  });
}

bool OpenClStream::copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src,
                        size_t src_offset, size_t bytes) {
  auto& dst_device = static_cast<const OpenClDevice&>(dst->device());
  auto& src_device = static_cast<const OpenClDevice&>(src->device());
  // One context covers the devices of one platform; between platforms hal stages the copy.
  if (dst_device.platform() != device_->platform() || src_device.platform() != device_->platform())
    return false;
  const ClRegion to = region_of(*dst, dst_offset);
  const ClRegion from = region_of(*src, src_offset);
  if (to.mem != from.mem || !overlaps(to.offset, from.offset, bytes)) {
    submit({dst, src}, [&] {
      DeviceSpan span(*this, device_spans_, "copy", "copy", trace::detail::transfer_args(bytes));
      cl_int status = api_.clEnqueueCopyBuffer(queue_, from.mem, to.mem, from.offset, to.offset,
                                               bytes, 0, nullptr, span.event());
      if (status != CL_SUCCESS) fail(status, "copy", "clEnqueueCopyBuffer", bytes);
      span.enqueued(api_);
    });
    return true;
  }
  // OpenCL refuses overlapping copies within one cl_mem: go through a scratch buffer, which
  // the driver frees once both copies have run.
  cl_int status = CL_SUCCESS;
  cl_mem scratch =
      api_.clCreateBuffer(device_->context(), CL_MEM_READ_WRITE, bytes, nullptr, &status);
  if (status != CL_SUCCESS) fail(status, "copy", "clCreateBuffer (overlap scratch)", bytes);
  submit({dst, src}, [&] {
    status = api_.clEnqueueCopyBuffer(queue_, from.mem, scratch, from.offset, 0, bytes, 0, nullptr,
                                      nullptr);
    if (status == CL_SUCCESS)
      status = api_.clEnqueueCopyBuffer(queue_, scratch, to.mem, 0, to.offset, bytes, 0, nullptr,
                                        nullptr);
    api_.clReleaseMemObject(scratch);
    if (status != CL_SUCCESS) fail(status, "copy", "clEnqueueCopyBuffer", bytes);
  });
  return true;
}

void OpenClStream::fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
                        size_t pattern_size) {
  const ClRegion to = region_of(*dst, dst_offset);
  if (to.offset % pattern_size == 0) {
    submit({dst}, [&] {
      DeviceSpan span(*this, device_spans_, "copy", "fill", trace::detail::transfer_args(bytes));
      cl_int status = api_.clEnqueueFillBuffer(queue_, to.mem, pattern, pattern_size, to.offset,
                                               bytes, 0, nullptr, span.event());
      if (status != CL_SUCCESS) fail(status, "fill", "clEnqueueFillBuffer", bytes);
      span.enqueued(api_);
    });
    return;
  }
  // clEnqueueFillBuffer needs an offset aligned to the pattern: write the repeated pattern.
  auto data = std::make_shared<std::vector<unsigned char>>(bytes);
  for (size_t at = 0; at < bytes; at += pattern_size)
    std::memcpy(data->data() + at, pattern, pattern_size);
  submit({dst, data}, [&] {
    DeviceSpan span(*this, device_spans_, "copy", "fill", trace::detail::transfer_args(bytes));
    cl_int status = api_.clEnqueueWriteBuffer(queue_, to.mem, CL_FALSE, to.offset, bytes,
                                              data->data(), 0, nullptr, span.event());
    if (status != CL_SUCCESS) fail(status, "fill", "clEnqueueWriteBuffer", bytes);
    span.enqueued(api_);
  });
}

void OpenClStream::host_callback(std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  if (!callbacks_) callbacks_ = std::make_shared<async::WorkQueue>();
  cl_event marker = nullptr;
  cl_int status = api_.clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &marker);
  if (status != CL_SUCCESS) fail(status, "host_callback", "clEnqueueMarkerWithWaitList");
  cl_event gate = api_.clCreateUserEvent(device_->context(), &status);
  if (status != CL_SUCCESS) {
    api_.clReleaseEvent(marker);
    fail(status, "host_callback", "clCreateUserEvent");
  }
  // From here the pending callback owns the gate: whatever happens, it opens it.
  auto* pending = new PendingCallback(device_, std::move(fn), gate, callbacks_, failures_,
                                      ++callbacks_enqueued_);
  status = api_.clEnqueueBarrierWithWaitList(queue_, 1, &gate, nullptr);
  if (status == CL_SUCCESS)
    status = api_.clSetEventCallback(marker, CL_COMPLETE, &on_marker_complete, pending);
  if (status != CL_SUCCESS) {
    delete pending;
    api_.clReleaseEvent(marker);
    fail(status, "host_callback", "clEnqueueBarrierWithWaitList / clSetEventCallback");
  }
  refs_.add_command();
  api_.clFlush(queue_);  // the marker must reach the device for the callback to ever run
}

void OpenClStream::record(EventImpl& event) {
  cl_event marker = nullptr;
  detail::StreamFailures::Mark callbacks;
  {
    std::lock_guard lock(mutex_);
    marker = fence_open_batch(true);
    callbacks = failures_->mark(callbacks_enqueued_);
    api_.clFlush(queue_);  // so that host waits and polls see progress
  }
  static_cast<OpenClEvent&>(event).set_fence(
      std::make_shared<ClFence>(device_, marker, serial(), std::move(callbacks)));
}

void OpenClStream::wait(EventImpl& event) {
  std::shared_ptr<ClFence> fence = static_cast<OpenClEvent&>(event).cl_fence();
  if (fence->device().platform() != device_->platform()) {  // another context: wait on the host
    host_callback([fence] { fence->wait(); });
    return;
  }
  cl_event native = fence->native();
  submit({fence}, [&] {
    cl_int status = api_.clEnqueueBarrierWithWaitList(queue_, 1, &native, nullptr);
    if (status != CL_SUCCESS) fail(status, "wait", "clEnqueueBarrierWithWaitList");
  });
}

void OpenClStream::synchronize() {
  Batches batches;
  std::vector<Ref> open;
  std::shared_ptr<async::WorkQueue> callbacks;
  {
    std::lock_guard lock(mutex_);
    // On the callback thread itself (a deleter of a callback that was skipped, its work having
    // failed): waiting would wait for this thread. The work before the callback is over.
    if (callbacks_ && callbacks_->on_worker_thread()) return;
    refs_.take_all(batches, open);
    callbacks = callbacks_;
  }
  const cl_int status = api_.clFinish(queue_);
  wait_for_spans(device_spans_);         // the driver calls back after completion
  if (callbacks) callbacks->wait_all();  // a callback's error is stored after its gate opens
  cl_int failed = refs_.first_failure(batches);
  refs_.release(batches);
  open.clear();
  {
    std::lock_guard lock(mutex_);
    const cl_int earlier = refs_.take_failure();
    if (failed == CL_SUCCESS) failed = earlier;
  }
  if (status != CL_SUCCESS) failed = status;
  if (failed != CL_SUCCESS)
    throw Error(ErrorCode::AsyncFailure,
                "work enqueued on a stream of " + describe(*device_) +
                    " failed: " + status_name(failed) + " (" + std::to_string(failed) + ")",
                failed);
  if (callbacks)
    if (std::exception_ptr error = callbacks->take_error()) {
      failures_->reported();
      throw_async_failure(*device_, error);
    }
}

bool OpenClStream::query() {
  Batches done;
  bool idle = false;
  {
    std::lock_guard lock(mutex_);
    if (refs_.has_open_commands()) fence_open_batch(false);
    api_.clFlush(queue_);
    refs_.take_completed(done);
    idle = refs_.idle();
  }
  refs_.release(done);
  return idle;
}

}  // namespace hal::opencl
