// A stream of an OpenCL device: one in-order command queue.
//
// Enqueued work keeps what it uses (buffers, staging memory) alive until it has run, as hal's
// ownership rule asks. Rather than an event per command, the references of consecutive commands
// are gathered and closed by a marker event every kRefsPerFence references, at each record,
// query and synchronize; a batch is dropped once its marker has completed.
//
// Host callbacks never run on the driver's thread (OpenCL forbids blocking calls there, and a
// callback may copy through another backend): a marker's completion hands the callback to the
// stream's own callback thread, and a user event that the thread sets afterwards holds back the
// queue's later commands until the callback has returned.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "hal/backend.hpp"
#include "host/work_queue.hpp"
#include "opencl_device.hpp"

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
  void record(EventImpl& event) override;
  void wait(EventImpl& event) override;
  void synchronize() override;
  bool query() override;

  cl_command_queue native() const { return queue_; }

 private:
  static constexpr size_t kRefsPerFence = 64;
  using Ref = std::shared_ptr<const void>;
  struct Batch {
    cl_event fence;
    std::vector<Ref> refs;
  };

  // Runs `enqueue` (which enqueues one command) under mutex_, then keeps `refs` until that
  // command has run. Batches found completed are dropped after the lock is released.
  template <class Enqueue>
  void submit(std::vector<Ref> refs, Enqueue&& enqueue) {
    std::vector<Batch> done;
    {
      std::lock_guard lock(mutex_);
      enqueue();
      enqueued(refs, done);
    }
    release(done);
  }
  // Under mutex_: counts the command just enqueued and takes its references.
  void enqueued(std::vector<Ref>& refs, std::vector<Batch>& done);
  // Closes the open batch with a marker; returns the marker's event (one reference is the
  // caller's) or null when asked not to keep it.
  cl_event fence_open_batch(bool keep_event);
  // Moves the batches whose markers have completed into `done`, to be dropped unlocked.
  void take_completed(std::vector<Batch>& done);
  void release(std::vector<Batch>& batches);
  std::string where(std::string_view operation) const;
  // Throws the error of a failed enqueue: built only then, since enqueues are the hot path.
  [[noreturn]] void fail(cl_int status, std::string_view operation, std::string_view call,
                         size_t bytes = 0) const;

  std::shared_ptr<OpenClDevice> device_;
  const ClApi& api_;
  cl_command_queue queue_;
  std::mutex mutex_;
  std::vector<Ref> open_refs_;                  // of commands after the last marker
  size_t open_commands_ = 0;                    // commands after the last marker
  std::deque<Batch> in_flight_;                 // closed batches, oldest first
  cl_int failed_status_ = CL_SUCCESS;           // of the first batch that ended in an error
  std::shared_ptr<host::WorkQueue> callbacks_;  // made on the first host callback
};

}  // namespace hal::opencl
