// A CUDA driver without a GPU, for the tests and benchmarks of the CUDA backend's host code: the
// entry points hal reads from libcuda.so.1, answered on the host. Not part of libhal.
//
// What it models: one device (an H100-like "hal stand-in GPU", sm_90, 80 GiB) with its primary
// context, current per thread; streams, events and kernels as handles; device and pinned memory
// from malloc (every host address counts as pinned, so copies never stage). Work does what it
// says when it is enqueued (a copy copies, a memset sets), and the driver counts each call.
// Completion is one sequence over all streams: each command takes the next number, and an event
// or stream reports done once the driver has completed that number: at once, or, while
// completion is deferred, only at complete() or a synchronisation. Host functions and stream memory
// operations are refused (CUDA_ERROR_NOT_SUPPORTED), as is every entry point not listed in
// stand_in_driver.cpp.
//
// One Driver at a time: the table's entry points are plain functions that find it through a
// global. Destroy it after everything made from it (devices, streams, buffers, kernels).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_api.hpp"
#include "hal/device.hpp"
#include "hal/kernel.hpp"

namespace hal::cuda::stand_in {

// What the driver was asked, since it was made.
struct Counts {
  uint64_t launches = 0;          // cuLaunchKernel calls that succeeded
  uint64_t commands = 0;          // everything enqueued: launches, copies, memsets, records, waits
  uint64_t events_created = 0;    // cuEventCreate
  uint64_t events_live = 0;       // created and not yet destroyed
  uint64_t event_records = 0;     // cuEventRecord
  uint64_t event_queries = 0;     // cuEventQuery
  uint64_t context_queries = 0;   // cuCtxGetCurrent
  uint64_t allocations_live = 0;  // device and pinned memory not yet freed
};

// The geometry of the latest launch (recorded while record_launches(true)).
struct Launch {
  CUfunction function = nullptr;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned shared_bytes = 0;
  // The bytes of its parameters, as many and as large as record_launches said (the driver
  // reads what the kernel's signature declares; the stand-in has none).
  std::vector<std::vector<unsigned char>> parameters;
};

class Driver {
 public:
  Driver();
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const std::shared_ptr<const CuApi>& api() const { return api_; }
  // cuda:0 of this driver, as the CUDA backend would make it (describe_device on the table).
  Device device() const;
  // A kernel of `device` named `name` with no signature (arguments unchecked by hal), as if
  // compiled: launching it runs nothing. The driver reports `max_threads` for it as
  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (below 1024: a kernel heavy in registers).
  Kernel kernel(const Device& device, std::string name, int max_threads = 1024) const;
  // The function handle of every such kernel.
  CUfunction function() const;

  // While deferred, enqueued work is not reported done until complete() or a synchronisation.
  void defer_completion(bool deferred);
  void complete();
  // The status the next cuLaunchKernel calls return (CUDA_SUCCESS: launches succeed again).
  void fail_launches(CUresult result) { fail_launches_ = result; }
  // The status cuEventQuery and cuStreamSynchronize return for completed work from now on,
  // as when a kernel faulted.
  void fail_work(CUresult result) { fail_work_ = result; }
  // Keeps the latest launch's geometry, and the bytes of its parameters of these sizes.
  void record_launches(std::vector<size_t> parameter_sizes = {});

  Counts counts() const;
  Launch last_launch() const;

  // For the entry points (stand_in_driver.cpp).
  struct State;
  State& state() const { return *state_; }

 private:
  std::shared_ptr<const CuApi> api_;
  std::unique_ptr<State> state_;
  std::atomic<CUresult> fail_launches_{CUDA_SUCCESS};
  std::atomic<CUresult> fail_work_{CUDA_SUCCESS};
  std::atomic<bool> record_launches_{false};
  mutable std::atomic<int> kernel_max_threads_{1024};  // what cuFuncGetAttribute answers
  friend struct EntryPoints;
};

}  // namespace hal::cuda::stand_in
