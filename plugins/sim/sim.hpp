// The simulated accelerator's objects. Built against hal/plugin.h, as a vendor's plugin would
// be: nothing here includes hal's C++ headers but hal/units.hpp, whose number parser
// sim_config.cpp reads HAL_SIM_CONFIG with (compiled in; no link to libhal).
#pragma once

#include <atomic>
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

namespace sim {

// HAL_SIM_CONFIG="devices=4,memory=512M,bandwidth_gbps=200,gflops=5000,launch_us=4,
// fail_alloc_at=3,fail_op_at=0,lose_device_at=0,fault_device=0,mixed=1". Faults count calls on
// fault_device, from 1; 0 turns a fault off. mixed=1 gives the devices different memory and
// speeds (config_of_device), for tests of selection. Unset: no devices at all.
struct Config {
  uint32_t devices = 1;
  uint64_t memory_bytes = 1ull << 30;
  double bandwidth_gbps = 100.0;
  double gflops = 1000.0;
  double launch_us = 5.0;
  uint64_t fail_alloc_at = 0;   // the Nth allocation fails with OUT_OF_MEMORY, once
  uint64_t fail_op_at = 0;      // the Nth op fails, once
  uint64_t lose_device_at = 0;  // the Nth call on the device loses it, for good
  uint32_t fault_device = 0;
  bool mixed = false;
};

// Device `index`'s configuration. Mixed devices scale memory by ((i % 8) + 1) / 8, gflops by
// ((5i % 16) + 1) / 16 and bandwidth by ((3i % 8) + 1) / 8 of the configured figures.
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
  uint64_t calls = 0;        // every call that names the device
  std::atomic<bool> lost{false};

  // Counts a call on the device; false once it is lost (this call may be what loses it).
  bool count_call();
};

struct hal_plugin_buffer_s {
  hal_plugin_device_s* device = nullptr;
  uint64_t size = 0;
  std::unique_ptr<unsigned char[]> bytes;  // the private arena: the host never sees it
};

// A stream runs its work in order on a thread of its own, as a device's queue would, and keeps
// the simulated time at which its work completes, from the device's performance model.
struct hal_plugin_stream_s {
  explicit hal_plugin_stream_s(hal_plugin_device_s* owner);
  ~hal_plugin_stream_s();  // finishes the work enqueued

  void enqueue(std::function<void()> work);
  void wait_idle();
  bool idle();
  void advance(double bytes, double flops);  // on the worker: the model's time for the work

  hal_plugin_device_s* device;
  double clock_us = 0;  // the worker's alone

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
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
  double time_us = 0;  // the simulated time of the latest completed record
};

namespace sim {

// Whether an op takes the dtype (and exists): HAL_STATUS_OK, or a failure with its message.
hal_status check_binary(hal_plugin_op op, hal_plugin_dtype dtype);
hal_status check_unary(hal_plugin_op op, hal_plugin_dtype dtype);
hal_status check_reduce(hal_plugin_op op, hal_plugin_dtype dtype);

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
hal_status check_launch(const hal_plugin_kernel_s& kernel, const hal_plugin_kernel_arg* args,
                        uint32_t count);
void run_kernel(const hal_plugin_kernel_s& kernel, uint64_t items,
                const std::vector<hal_plugin_kernel_arg>& args);

}  // namespace sim
