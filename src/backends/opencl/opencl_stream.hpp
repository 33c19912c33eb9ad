// A stream of an OpenCL device: one in-order command queue.
//
// Enqueued work keeps what it uses (buffers, staging memory) alive until it has run, as hal's
// ownership rule asks, behind marker events as fences (async::FencedRefs).
//
// Host callbacks never run on the driver's thread (OpenCL forbids blocking calls there, and a
// callback may copy through another backend): a marker's completion hands the callback to the
// stream's own callback thread, and a user event that the thread sets afterwards holds back the
// queue's later commands until the callback has returned.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/async/fenced_refs.hpp"
#include "backends/async/work_queue.hpp"
#include "backends/opencl/opencl_device.hpp"
#include "backends/opencl/opencl_device_span.hpp"
#include "core/event_record.hpp"
#include "hal/backend.hpp"

namespace hal::opencl {

class OpenClKernel;

class OpenClStream final : public StreamImpl {
 public:
  explicit OpenClStream(std::shared_ptr<OpenClDevice> device);
  ~OpenClStream() override;

  DeviceImpl& device() const override { return *device_; }
  void copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                      size_t bytes) override;
  void copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) override;
  bool copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src, size_t src_offset,
            size_t bytes) override;
  void fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
            size_t pattern_size) override;
  void host_callback(std::function<void()> fn) override;
  void launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
              std::span<const KernelArg> args) override;
#ifdef HAL_HAVE_CLBLAST
  void gemm(const GemmDesc& gemm) override;  // CLBlast
#endif
  void record(EventImpl& event) override;
  void wait(EventImpl& event) override;
  void synchronize() override;
  bool query() override;

  cl_command_queue native() const { return queue_; }

 private:
  using Ref = std::shared_ptr<const void>;
  // Marker events as the fences of FencedRefs.
  struct ClFences {
    using Fence = cl_event;
    using Status = cl_int;
    static constexpr cl_int kSuccess = CL_SUCCESS;
    const ClApi* api;
    std::optional<cl_int> poll(cl_event fence) const {
      cl_int status = CL_QUEUED;
      api->clGetEventInfo(fence, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                          nullptr);
      if (status > CL_COMPLETE) return std::nullopt;
      return status < 0 ? status : CL_SUCCESS;
    }
    void destroy(cl_event fence) const { api->clReleaseEvent(fence); }
  };
  using Batches = async::FencedRefs<ClFences>::Batches;

  // Runs `enqueue` (which enqueues one command) under mutex_, then keeps `refs` until that
  // command has run. Batches found completed are dropped after the lock is released.
  template <class Enqueue>
  void submit(std::vector<Ref> refs, Enqueue&& enqueue) {
    Batches done;
    {
      std::lock_guard lock(mutex_);
      enqueue();
      if (refs_.add(refs)) {
        fence_open_batch(false);
        refs_.take_completed(done);
      }
    }
    refs_.release(done);
  }
  // The same for a command that uses buffers its caller holds: `each_object(keep)` calls
  // keep(const BufferPtr&) for each, under mutex_ once the command is enqueued, and a buffer the
  // open batch already holds takes no reference again (FencedRefs::hold).
  template <class EachObject, class Enqueue>
  void submit_holding(EachObject&& each_object, Enqueue&& enqueue) {
    Batches done;
    {
      std::lock_guard lock(mutex_);
      enqueue();
      each_object([this](const auto& ref) { refs_.hold(ref); });
      if (refs_.end_command()) {
        fence_open_batch(false);
        refs_.take_completed(done);
      }
    }
    refs_.release(done);
  }
  // Closes the open batch with a marker; returns the marker's event (one reference is the
  // caller's) or null when asked not to keep it.
  cl_event fence_open_batch(bool keep_event);
  std::string where(std::string_view operation) const;
  // Throws the error of a failed enqueue: built only then, since enqueues are the hot path.
  [[noreturn]] void fail(cl_int status, std::string_view operation, std::string_view call,
                         size_t bytes = 0) const;

  std::shared_ptr<OpenClDevice> device_;
  const ClApi& api_;
  cl_command_queue queue_;
  std::mutex mutex_;
  async::FencedRefs<ClFences> refs_;
  std::shared_ptr<async::WorkQueue> callbacks_;  // made on the first host callback
  uint64_t callbacks_enqueued_ = 0;              // under mutex_
  // The callbacks' failures, for the records after them (the device's own errors are the
  // markers').
  std::shared_ptr<detail::StreamFailures> failures_ = std::make_shared<detail::StreamFailures>();
  PendingSpans device_spans_ = std::make_shared<std::atomic<int>>(0);  // while tracing
};

}  // namespace hal::opencl
