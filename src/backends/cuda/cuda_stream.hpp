// A stream of a CUDA device: one CUstream of the primary context.
//
// Enqueued work keeps what it uses alive until it has run, behind CUevents as fences
// (async::FencedRefs, as in the OpenCL backend).
//
// Host callbacks: the driver's host-function thread may not call CUDA, and a hal callback may
// (a staged copy, a wait on another stream). The driver runs every stream's host functions on
// one thread, so a callback held there would hold up every other stream's (a callback waiting
// for another stream's would never run). The host function therefore hands the callback to the
// stream's own callback thread and returns at once; the stream's later work waits behind
// cuStreamWaitValue32 on a pinned word that thread sets when the callback has returned.
// HAL_CUDA_HOST_CALLS=blocking (and a driver without stream memory operations) keeps the
// driver's thread waiting for each callback instead.
//
// Copies from and to pageable host memory go through pinned staging (cuda_staging.hpp), a host
// function copying each chunk, so they read and write the host memory in the stream's order
// (an upload on an idle stream takes the driver's own path, which reads at once: the same).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "backends/async/fenced_refs.hpp"
#include "backends/async/work_queue.hpp"
#include "backends/cuda/cublas.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_device_spans.hpp"
#include "core/event_record.hpp"
#include "hal/backend.hpp"

namespace hal::cuda {

class CudaStream final : public StreamImpl {
 public:
  using Ref = std::shared_ptr<const void>;
  using BlasCall = std::function<cublasStatus_t(const Cublas&, cublasHandle_t)>;

  explicit CudaStream(std::shared_ptr<CudaDevice> device);
  ~CudaStream() override;

  DeviceImpl& device() const override { return *device_; }
  void copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                      size_t bytes) override;
  void copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) override;
  bool copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src, size_t src_offset,
            size_t bytes) override;
  void fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
            size_t pattern_size) override;
  void host_callback(std::function<void()> fn) override;
  void keep_until_done(std::shared_ptr<const void> value) override;  // with the commands' refs
  void launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
              std::span<const KernelArg> args) override;
  void begin_capture() override;
  std::shared_ptr<GraphImpl> end_capture() override;
  void launch_graph(const std::shared_ptr<GraphImpl>& graph) override;
  void gemm(const GemmDesc& gemm) override;  // cuBLAS
  void record(EventImpl& event) override;
  void wait(EventImpl& event) override;
  void synchronize() override;
  bool query() override;

  CUstream native() const { return stream_; }

  // Enqueues the work of one cuBLAS call (`call` makes it with the handle it is given) and keeps
  // `refs` until that work has run. The handle is the stream's own, made on first use, bound
  // to this stream and given a workspace of hal's, so that calls may be captured in a graph.
  // Throws the cuBLAS status as a hal::Error naming `what`.
  void enqueue_blas(std::vector<Ref> refs, std::string_view what, const BlasCall& call);

 private:
  // CUevents as the fences of FencedRefs.
  struct CuFences {
    using Fence = CUevent;
    using Status = CUresult;
    static constexpr CUresult kSuccess = CUDA_SUCCESS;
    static constexpr bool kReusable = true;  // a passed CUevent may be recorded again
    const CuApi* api;
    std::optional<CUresult> poll(CUevent fence) const {
      const CUresult result = api->cuEventQuery(fence);
      if (result == CUDA_ERROR_NOT_READY) return std::nullopt;
      return result;
    }
    void destroy(CUevent fence) const { api->cuEventDestroy(fence); }
  };
  using Batches = async::FencedRefs<CuFences>::Batches;

  // Runs `enqueue` (which enqueues one command and returns its CUresult) under mutex_ with the
  // context current; then `each_object(keep)` calls keep(const std::shared_ptr<T>&) for each object
  // the command uses, which the stream keeps until the command has run. An object the open
  // batch already holds takes no reference again (FencedRefs::hold): a loop launching one
  // kernel on the same buffers does no reference counting. `fail_with(result)` throws the
  // error of a failed enqueue: its message is built only then. While a trace records, the
  // command's GPU time goes to the stream's device track as `span`.
  template <class EachObject, class Enqueue, class Fail>
  void submit_holding(EachObject&& each_object, Enqueue&& enqueue, Fail&& fail_with,
                      const CommandSpan& span = {}) {
    Batches done;
    {
      std::lock_guard lock(mutex_);
      device_->make_current();
      if (const CUresult result = timed_enqueue(span, enqueue, CUDA_SUCCESS);
          result != CUDA_SUCCESS) [[unlikely]]
        fail_with(result);
      keep_objects(each_object, done);
    }
    refs_.release(done);
  }
  // A command that uses `objects` (shared_ptrs). `operation`: a literal, also the span's name
  // on the device track.
  template <class Enqueue, class... Objects>
  void submit(const char* operation, const char* call, size_t bytes, Enqueue&& enqueue,
              const Objects&... objects) {
    submit_holding([&](auto&& keep) { (keep(objects), ...); }, std::forward<Enqueue>(enqueue),
                   [&](CUresult result) { fail(result, operation, call, bytes); },
                   trace::enabled()
                       ? CommandSpan{"copy", operation, trace::detail::transfer_args(bytes)}
                       : CommandSpan{});
  }
  // Under mutex_: returns enqueue()'s status; while a trace records (and the stream is not
  // capturing), the command is timed as `span` unless that status is not `success`.
  template <class Enqueue, class Status>
  Status timed_enqueue(const CommandSpan& span, Enqueue& enqueue, Status success) {
    if (span.name.empty() || !trace::enabled() || capture_) [[likely]]
      return enqueue();
    if (!spans_) spans_ = std::make_unique<DeviceSpans>(device_, *this);
    spans_->begin(stream_, span);
    const Status status = enqueue();
    if (status == success)
      spans_->end(stream_);
    else
      spans_->cancel();
    return status;
  }
  // Under mutex_: keeps what the command just enqueued uses (`each_object(keep)` calls keep for
  // each shared_ptr): for the graph while capturing, else in the open batch, which is fenced
  // when it is full (its completed predecessors go to `done`).
  template <class EachObject>
  void keep_objects(EachObject& each_object, Batches& done) {
    if (capture_) {
      each_object([this](const auto& ref) { capture_->push_back(ref); });
      return;
    }
    each_object([this](const auto& ref) { refs_.hold(ref); });
    if (refs_.end_command()) {
      fence_open_batch();
      refs_.take_completed(done);
    }
  }
  // Under mutex_: records a fence (a spare that has passed, or a new CUevent) after the open
  // batch's commands and closes it.
  void fence_open_batch();
  std::string where(std::string_view operation) const;
  struct HostFlag;  // cuda_stream.cpp
  std::shared_ptr<HostFlag> make_host_flag();
  // Under mutex_, the context current: whether a copy of `bytes` from or to `host` goes through
  // pinned staging (pageable memory, outside a capture).
  bool stages(const void* host, size_t bytes) const;
  // Under mutex_, the context current: a copy between pageable host memory and `device`
  // through a pinned block it takes into `block_owner` (which the caller keeps until the copy
  // has run), a chunk at a time, so that the host memory is read and written when the stream
  // reaches the copy, as pinned memory would be.
  CUresult staged_copy(CUdeviceptr device, void* host, size_t bytes, bool to_device,
                       std::shared_ptr<void>& block_owner);
  // Under mutex_: throws InvalidState when the stream is capturing.
  void refuse_while_capturing(std::string_view operation) const;
  [[noreturn]] void fail(CUresult result, std::string_view operation, std::string_view call,
                         size_t bytes = 0) const;

  std::shared_ptr<CudaDevice> device_;
  const CuApi& api_;
  CUstream stream_ = nullptr;
  std::mutex mutex_;
  async::FencedRefs<CuFences> refs_;
  std::shared_ptr<async::WorkQueue> callbacks_;  // made on the first host callback
  std::unique_ptr<DeviceSpans> spans_;           // made on the first traced command
  // The word the callback thread sets to the number of the callback that has just returned;
  // made with the first callback, null where the driver refuses cuStreamWaitValue32.
  std::shared_ptr<HostFlag> host_flag_;
  bool host_flag_tried_ = false;
  uint32_t host_calls_ = 0;          // callbacks enqueued: the value the newest waits for
  uint64_t callbacks_enqueued_ = 0;  // every callback, posted or not: their positions
  // The callbacks' failures, for the records after them (the device's own errors are the
  // driver's, which its events report).
  std::shared_ptr<detail::StreamFailures> failures_ = std::make_shared<detail::StreamFailures>();
  // While capturing: what the captured work uses, for the graph to keep (no fences are
  // recorded then: the work does not run until the graph is replayed).
  std::unique_ptr<std::vector<Ref>> capture_;
  // cuBLAS, made on the first enqueue_blas.
  std::shared_ptr<const Cublas> cublas_;
  cublasHandle_t blas_ = nullptr;
  BufferPtr blas_workspace_;
};

}  // namespace hal::cuda
