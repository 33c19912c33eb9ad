// The simulated accelerator's objects. Built against hal/plugin.h, as a vendor's plugin would
// be: nothing here includes hal's C++ headers but hal/units.hpp, whose number parser
// sim_config.cpp reads HAL_SIM_CONFIG with (compiled in; no link to libhal).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hal/plugin.h"

// HAL_SIM_ABI_1_1: built against plugin.h 1.1 (tests/plugin/abi_1_1) for hal's tests of plugins
// of an older minor version: without what 1.2 added.
#ifdef HAL_SIM_ABI_1_1
static_assert(HAL_PLUGIN_ABI_MINOR == 1, "sim's 1.1 build must find the 1.1 plugin.h first");
#endif

namespace sim {

// HAL_SIM_CONFIG="devices=4,memory=512M,bandwidth_gbps=200,gflops=5000,launch_us=4,
// fail_alloc_at=3,fail_op_at=0,fail_event_at=0,fail_query_at=0,lose_device_at=0,fault_device=0,
// mixed=1,pace=1".
// Faults count calls
// on fault_device, from 1; 0 turns a fault off. mixed=1 gives the devices different memory and
// speeds (config_of_device), for tests of selection. memory, bandwidth_gbps, gflops and
// launch_us also take one figure per device, ':'-separated (`gflops=100:100:200:400`): device i
// takes entry i mod n. pace=1 makes each piece of work take its modelled time on the wall clock
// (hal_plugin_stream_s::advance). zero_uuid=1 leaves every device's UUID zero (for hal's tests
// of plugins that do). Unset: no devices at all.
struct Config {
  uint32_t devices = 1;
  uint64_t memory_bytes = 1ull << 30;
  double bandwidth_gbps = 100.0;
  double gflops = 1000.0;
  double launch_us = 5.0;
  uint64_t fail_alloc_at = 0;   // the Nth allocation fails with OUT_OF_MEMORY, once
  uint64_t fail_op_at = 0;      // the Nth op fails, once
  uint64_t fail_event_at = 0;   // the Nth event_create fails with OUT_OF_MEMORY, once
  uint64_t fail_query_at = 0;   // the Nth event_query fails with INTERNAL, once (a transient
                                // driver error, which says nothing of the work)
  uint64_t lose_device_at = 0;  // the Nth call on the device loses it, for good
  uint32_t fault_device = 0;
  bool mixed = false;
  bool pace = false;
  bool zero_uuid = false;  // report an all-zero UUID, as a plugin that does not know one might
  // Per-device figures from ':'-separated lists; empty where the key gave one figure (above).
  std::vector<uint64_t> memory_each;
  std::vector<double> bandwidth_each, gflops_each, launch_each;
};

// Device `index`'s configuration: its entry of each per-device list, then, for mixed devices,
// memory scaled by ((i % 8) + 1) / 8, gflops by ((5i % 16) + 1) / 16 and bandwidth by
// ((3i % 8) + 1) / 8. The lists are left empty in the result.
Config config_of_device(const Config& config, uint32_t index);

// Parses the text of HAL_SIM_CONFIG; returns false with `error` set for a bad entry.
bool parse_config(const char* text, Config& config, std::string& error);

// Sets the calling thread's last error and returns `status`.
hal_status fail(hal_status status, std::string message);

}  // namespace sim

// The opaque handles of plugin.h are these structs.
struct hal_plugin_device_s {
  uint32_t index = 0;
  sim::Config config;
  std::mutex mutex;  // guards used_bytes and the counters
  uint64_t used_bytes = 0;
  uint64_t allocations = 0;  // calls to buffer_allocate
  uint64_t ops = 0;          // op calls
  uint64_t events = 0;       // calls to event_create
  uint64_t queries = 0;      // calls to event_query
  uint64_t calls = 0;        // every call that names the device
  std::atomic<bool> lost{false};
  std::mutex streams_mutex;  // guards streams
  // Shared with quiesce, which waits for them unlocked: a host callback it waits for may call
  // into the plugin, which would take the lock again.
  std::vector<std::shared_ptr<hal_plugin_stream_s>> streams;

  // Counts a call on the device; false once it is lost (this call may be what loses it).
  bool count_call();
  // Once lost: returns when no stream of the device runs device work any more (the rest of it
  // is dropped) nor has a host callback of plugin.h 1.2's kind to run, as plugin.h asks before
  // DEVICE_LOST is returned. Told callbacks (host_callback_status) are not waited for.
  void quiesce();
};

// Arena memory, 256-byte aligned as hal's host_data promises for pinned memory.
struct ArenaDelete {
  void operator()(unsigned char* bytes) const;
};
using Arena = std::unique_ptr<unsigned char[], ArenaDelete>;
Arena make_arena(uint64_t bytes);  // zeroed

struct hal_plugin_buffer_s {
  hal_plugin_device_s* device = nullptr;
  uint64_t size = 0;
  Arena bytes;          // device memory: the host never sees it; pinned: the host's too
  bool pinned = false;  // host memory: not counted in the device's used_bytes
};

// A stream runs its work in order on a thread of its own, as a device's queue would, and keeps
// the simulated time at which its work completes, from the device's performance model.
// Work on a lost device: device work is dropped; the rest (host callbacks, event records and
// waits) still runs, so that what it holds is let go of and waiters wake. A loss waits for the
// device work and the plain callbacks in flight (plugin.h), not for event records and waits
// nor for told callbacks, which may be waiting for the very thread that found the loss.
enum class Work {
  device,
  event,          // records and waits
  callback,       // host_callback: runs as it is
  told_callback,  // host_callback_status: told whether the device was lost before it began
};

using WallClock = std::chrono::steady_clock;

struct hal_plugin_stream_s {
  explicit hal_plugin_stream_s(hal_plugin_device_s* owner);
  ~hal_plugin_stream_s();  // finishes the work enqueued

  void enqueue(std::function<void()> work, Work kind = Work::device);
  void wait_idle();
  // Once the device is lost: returns when the stream runs no device work and has no plain host
  // callback to run.
  void wait_settled();
  bool idle();
  bool on_worker() const;  // whether the calling thread is the worker
  // On the worker: whether the device was lost when the running item began.
  bool began_after_loss() const { return began_after_loss_; }
  // On the worker: the model's time for the work (launch_us + the longer of bytes over the
  // bandwidth and flops over the throughput). Paced, it also sleeps until the work's deadline:
  // its start on the stream's timeline plus that time.
  void advance(double bytes, double flops);
  // On the worker, paced: the timeline reaches at least `time` (an event waited for, a host
  // callback that held the stream).
  void pace_to(WallClock::time_point time);

  hal_plugin_device_s* device;
  double clock_us = 0;  // the worker's alone
  // Paced streams: when the modelled work so far completes on the wall clock. Work starts at
  // the later of this and its enqueue, so work queued back to back accumulates. The worker's.
  WallClock::time_point paced_until{};

 private:
  struct Item {
    std::function<void()> work;
    Work kind;
    WallClock::time_point enqueued;  // paced streams only
  };
  void run();
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;
  bool busy_ = false;
  Work running_ = Work::device;    // the kind of the item that runs while busy_
  bool began_after_loss_ = false;  // the running item's; set under mutex_, read on the worker
  size_t queued_callbacks_ = 0;    // Work::callback items in queue_
  bool stopping_ = false;
  WallClock::time_point item_start_{};  // the running item's start on the timeline
  std::thread worker_;
};

// Records complete in order: `issued` counts event_record calls, `done` the records that ran.
// Work that still refers to an event keeps it alive after event_destroy.
struct hal_plugin_kernel_s {
  std::string entry;
  float scale = 1.0f;
};

struct hal_plugin_event_s {
  void retain() { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  std::atomic<int> refs{1};
  hal_plugin_device_s* device = nullptr;
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t issued = 0;
  uint64_t done = 0;
  double time_us = 0;                // the simulated time of the latest completed record
  WallClock::time_point paced_at{};  // paced: the recording stream's timeline at that record
};

namespace sim {

// Whether an op takes its operands: it exists, takes the dtype, and reads and writes only inside
// their buffers (INVALID_ARGUMENT naming the op and the operand otherwise). HAL_STATUS_OK, or a
// failure with its message.
hal_status check_binary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& a,
                        const hal_plugin_tensor& b);
hal_status check_unary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x);
hal_status check_reduce(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x,
                        uint32_t axes);
hal_status check_matmul(const hal_plugin_gemm& gemm);

// The built-in ops on the arena's memory (sim_ops.cpp), checked already.
hal_status binary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& a,
                  const hal_plugin_tensor& b);
hal_status unary(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x);
hal_status reduce(hal_plugin_op op, const hal_plugin_tensor& out, const hal_plugin_tensor& x,
                  uint32_t axes);
hal_status matmul(const hal_plugin_gemm& gemm);

// Native kernels (sim_kernels.cpp).
hal_status compile_kernel(uint32_t format, const std::string& source, const std::string& entry,
                          const std::string& options, hal_plugin_kernel* kernel);
// A launch's arguments, copied out of hal's array (whose elements are struct_size apart).
hal_status read_args(const hal_plugin_kernel_arg* args, uint32_t count,
                     std::vector<hal_plugin_kernel_arg>& out);
// `items`: the launch's work-items; `group`: the work-group size it uses, local[0] or the
// default. Refuses buffers the kernel would run past.
hal_status check_launch(const hal_plugin_kernel_s& kernel,
                        const std::vector<hal_plugin_kernel_arg>& args, uint64_t items,
                        uint64_t group);
void run_kernel(const hal_plugin_kernel_s& kernel, uint64_t items, uint64_t group,
                const std::vector<hal_plugin_kernel_arg>& args);

// Local memory a launch may take (device_properties' local_memory_bytes), and the work-group
// size when hal leaves it to the plugin.
inline constexpr uint64_t kLocalMemoryBytes = 48 * 1024;
inline constexpr uint64_t kDefaultGroup = 64;

}  // namespace sim
