#include "backends/cuda/stand_in_driver.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_device_info.hpp"
#include "backends/cuda/cuda_kernel.hpp"

namespace hal::cuda::stand_in {

struct Driver::State {
  // The completion sequence: commands take numbers from `enqueued`; those up to `completed`
  // have run.
  std::atomic<uint64_t> enqueued{0}, completed{0};
  std::atomic<bool> deferred{false};
  std::atomic<uint64_t> launches{0}, events_created{0}, events_live{0}, event_records{0},
      event_queries{0}, context_queries{0}, allocations_live{0};
  std::mutex launch_mutex;
  Launch last_launch;
  std::vector<size_t> parameter_sizes;         // of the launches recorded
  char context = 0, module = 0, function = 0;  // their addresses are the handles
};

namespace {

std::atomic<Driver*> g_driver{nullptr};

Driver& driver() {
  Driver* live = g_driver.load(std::memory_order_acquire);
  if (!live) {  // a handle outlived its driver: say so rather than crash somewhere else
    std::fputs("hal's stand-in CUDA driver: called after it was destroyed\n", stderr);
    std::abort();
  }
  return *live;
}

// A stream or event handle: the number of its latest command.
struct Handle {
  std::atomic<uint64_t> command{0};
};

thread_local CUcontext t_current = nullptr;

constexpr size_t kMemoryTotal = size_t{80} << 30;

// Every entry point refuses until a definition below replaces it.
template <class F>
struct Refuse;
template <class... A>
struct Refuse<CUresult (*)(A...)> {
  static CUresult call(A...) { return CUDA_ERROR_NOT_SUPPORTED; }
};

int attribute(CUdevice_attribute which) {
  switch (which) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return 132;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      return 1980000;  // kHz
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return 227 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return 50 << 20;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      return 2619000;  // kHz
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      return 5120;
    default:
      return 0;  // integrated, managed memory, memory pools ...: no
  }
}

}  // namespace

struct EntryPoints {
  static Driver::State& state() { return driver().state(); }

  // A command enqueued: its number, completed at once unless completion is deferred.
  static uint64_t enqueue() {
    Driver::State& s = state();
    const uint64_t number = s.enqueued.fetch_add(1, std::memory_order_relaxed) + 1;
    if (!s.deferred.load(std::memory_order_relaxed)) complete_up_to(number);
    return number;
  }
  static void complete_up_to(uint64_t number) {
    std::atomic<uint64_t>& completed = state().completed;
    uint64_t seen = completed.load(std::memory_order_relaxed);
    while (seen < number && !completed.compare_exchange_weak(seen, number)) {
    }
  }
  static bool done(uint64_t number) {
    return state().completed.load(std::memory_order_acquire) >= number;
  }
  // What finished work reports: the injected failure, if any.
  static CUresult work_status() { return driver().fail_work_.load(); }
  static void synchronize() { complete_up_to(state().enqueued.load()); }
  static Handle& handle(void* stream_or_event) { return *static_cast<Handle*>(stream_or_event); }
  // A command enqueued on `stream`, which it is now the latest of.
  static CUresult enqueue_on(CUstream stream) {
    handle(stream).command = enqueue();
    return CUDA_SUCCESS;
  }
  // A stream's or event's status: done once its latest command has run.
  static CUresult status_of(void* stream_or_event) {
    return done(handle(stream_or_event).command.load()) ? work_status() : CUDA_ERROR_NOT_READY;
  }
  static CUresult run_everything() {
    synchronize();
    return work_status();
  }

  static void install(CuApi& api) {
#define HAL_STAND_IN_REFUSE(name) api.name = &Refuse<decltype(api.name)>::call;
    HAL_CU_FUNCTIONS(HAL_STAND_IN_REFUSE)
#undef HAL_STAND_IN_REFUSE
    install_errors(api);
    install_device(api);
    install_memory(api);
    install_streams_and_events(api);
    install_work(api);
  }

  static void install_errors(CuApi& api) {
    api.driver_version = 13000;
    api.cuDriverGetVersion = [](int* version) {
      *version = 13000;
      return CUDA_SUCCESS;
    };
    api.cuGetErrorName = [](CUresult result, const char** name) {
      switch (result) {
        case CUDA_SUCCESS:
          *name = "CUDA_SUCCESS";
          break;
        case CUDA_ERROR_OUT_OF_MEMORY:
          *name = "CUDA_ERROR_OUT_OF_MEMORY";
          break;
        case CUDA_ERROR_NOT_SUPPORTED:
          *name = "CUDA_ERROR_NOT_SUPPORTED";
          break;
        case CUDA_ERROR_LAUNCH_FAILED:
          *name = "CUDA_ERROR_LAUNCH_FAILED";
          break;
        case CUDA_ERROR_ILLEGAL_ADDRESS:
          *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
          break;
        case CUDA_ERROR_INVALID_VALUE:
          *name = "CUDA_ERROR_INVALID_VALUE";
          break;
        default:
          *name = "CUDA_ERROR_UNKNOWN";
          break;
      }
      return CUDA_SUCCESS;
    };
    api.cuGetErrorString = [](CUresult, const char** text) {
      *text = "reported by hal's stand-in CUDA driver";
      return CUDA_SUCCESS;
    };
  }

  // The device and its primary context.
  static void install_device(CuApi& api) {
    api.cuDeviceGetCount = [](int* count) {
      *count = 1;
      return CUDA_SUCCESS;
    };
    api.cuDeviceGet = [](CUdevice* device, int ordinal) {
      *device = ordinal;
      return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    };
    api.cuDeviceGetName = [](char* name, int length, CUdevice) {
      if (length <= 0) return CUDA_ERROR_INVALID_VALUE;
      std::snprintf(name, static_cast<size_t>(length), "%s", "hal stand-in GPU");
      return CUDA_SUCCESS;
    };
    api.cuDeviceGetUuid = [](CUuuid* uuid, CUdevice) {
      for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0xa0 + i);
      return CUDA_SUCCESS;
    };
    api.cuDeviceTotalMem = [](size_t* bytes, CUdevice) {
      *bytes = kMemoryTotal;
      return CUDA_SUCCESS;
    };
    api.cuDeviceGetAttribute = [](int* value, CUdevice_attribute which, CUdevice) {
      *value = attribute(which);
      return CUDA_SUCCESS;
    };
    api.cuDevicePrimaryCtxRetain = [](CUcontext* context, CUdevice) {
      *context = reinterpret_cast<CUcontext>(&state().context);
      return CUDA_SUCCESS;
    };
    api.cuDevicePrimaryCtxRelease = [](CUdevice) { return CUDA_SUCCESS; };
    api.cuCtxGetCurrent = [](CUcontext* context) {
      state().context_queries.fetch_add(1, std::memory_order_relaxed);
      *context = t_current;
      return CUDA_SUCCESS;
    };
    api.cuCtxSetCurrent = [](CUcontext context) {
      t_current = context;
      return CUDA_SUCCESS;
    };
  }

  // Memory: the host's, all of it "pinned".
  static void install_memory(CuApi& api) {
    api.cuMemGetInfo = [](size_t* free, size_t* total) {
      *free = *total = kMemoryTotal;
      return CUDA_SUCCESS;
    };
    api.cuMemAlloc = [](CUdeviceptr* address, size_t bytes) {
      void* memory = std::malloc(bytes > 0 ? bytes : 1);
      if (!memory) return CUDA_ERROR_OUT_OF_MEMORY;
      state().allocations_live.fetch_add(1, std::memory_order_relaxed);
      *address = reinterpret_cast<CUdeviceptr>(memory);
      return CUDA_SUCCESS;
    };
    api.cuMemFree = [](CUdeviceptr address) {
      std::free(reinterpret_cast<void*>(address));
      state().allocations_live.fetch_sub(1, std::memory_order_relaxed);
      return CUDA_SUCCESS;
    };
    api.cuMemHostAlloc = [](void** memory, size_t bytes, unsigned int) {
      *memory = std::malloc(bytes > 0 ? bytes : 1);
      if (!*memory) return CUDA_ERROR_OUT_OF_MEMORY;
      state().allocations_live.fetch_add(1, std::memory_order_relaxed);
      return CUDA_SUCCESS;
    };
    api.cuMemFreeHost = [](void* memory) {
      std::free(memory);
      state().allocations_live.fetch_sub(1, std::memory_order_relaxed);
      return CUDA_SUCCESS;
    };
    api.cuPointerGetAttributes = [](unsigned int count, CUpointer_attribute* attributes,
                                    void** values, CUdeviceptr) {
      for (unsigned int i = 0; i < count; ++i)
        *static_cast<unsigned int*>(values[i]) =
            attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ? CU_MEMORYTYPE_HOST : 0;
      return CUDA_SUCCESS;
    };
  }

  static void install_streams_and_events(CuApi& api) {
    api.cuStreamCreate = [](CUstream* stream, unsigned int) {
      *stream = reinterpret_cast<CUstream>(new Handle);
      return CUDA_SUCCESS;
    };
    api.cuStreamDestroy = [](CUstream stream) {
      delete reinterpret_cast<Handle*>(stream);
      return CUDA_SUCCESS;
    };
    api.cuStreamSynchronize = [](CUstream) { return run_everything(); };
    api.cuStreamQuery = [](CUstream stream) { return status_of(stream); };
    api.cuStreamWaitEvent = [](CUstream stream, CUevent, unsigned int) {
      return enqueue_on(stream);
    };
    api.cuEventCreate = [](CUevent* event, unsigned int) {
      state().events_created.fetch_add(1, std::memory_order_relaxed);
      state().events_live.fetch_add(1, std::memory_order_relaxed);
      *event = reinterpret_cast<CUevent>(new Handle);
      return CUDA_SUCCESS;
    };
    api.cuEventDestroy = [](CUevent event) {
      delete reinterpret_cast<Handle*>(event);
      state().events_live.fetch_sub(1, std::memory_order_relaxed);
      return CUDA_SUCCESS;
    };
    api.cuEventRecord = [](CUevent event, CUstream stream) {
      state().event_records.fetch_add(1, std::memory_order_relaxed);
      handle(event).command = enqueue();
      handle(stream).command = handle(event).command.load();
      return CUDA_SUCCESS;
    };
    api.cuEventQuery = [](CUevent event) {
      state().event_queries.fetch_add(1, std::memory_order_relaxed);
      return status_of(event);
    };
    api.cuEventSynchronize = [](CUevent) { return run_everything(); };
  }

  // Work: done when enqueued.
  static void install_work(CuApi& api) {
    api.cuMemcpyHtoDAsync = [](CUdeviceptr to, const void* from, size_t bytes, CUstream stream) {
      std::memcpy(reinterpret_cast<void*>(to), from, bytes);
      return enqueue_on(stream);
    };
    api.cuMemcpyDtoHAsync = [](void* to, CUdeviceptr from, size_t bytes, CUstream stream) {
      std::memcpy(to, reinterpret_cast<const void*>(from), bytes);
      return enqueue_on(stream);
    };
    api.cuMemcpyDtoDAsync = [](CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream) {
      std::memmove(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes);
      return enqueue_on(stream);
    };
    api.cuMemsetD8Async = [](CUdeviceptr to, unsigned char value, size_t count, CUstream stream) {
      std::memset(reinterpret_cast<void*>(to), value, count);
      return enqueue_on(stream);
    };
    api.cuMemsetD16Async = [](CUdeviceptr to, unsigned short value, size_t count, CUstream stream) {
      auto* out = reinterpret_cast<unsigned short*>(to);
      for (size_t i = 0; i < count; ++i) out[i] = value;
      return enqueue_on(stream);
    };
    api.cuMemsetD32Async = [](CUdeviceptr to, unsigned int value, size_t count, CUstream stream) {
      auto* out = reinterpret_cast<unsigned int*>(to);
      for (size_t i = 0; i < count; ++i) out[i] = value;
      return enqueue_on(stream);
    };
    api.cuModuleUnload = [](CUmodule) { return CUDA_SUCCESS; };
    api.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; };
    api.cuFuncGetAttribute = [](int* value, CUfunction_attribute attribute, CUfunction) {
      if (attribute != CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) return CUDA_ERROR_NOT_SUPPORTED;
      *value = driver().kernel_max_threads_.load(std::memory_order_relaxed);
      return CUDA_SUCCESS;
    };
    api.cuLaunchKernel = [](CUfunction function, unsigned int gx, unsigned int gy, unsigned int gz,
                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                            CUstream stream, void** params, void**) {
      Driver& d = driver();
      if (const CUresult failure = d.fail_launches_.load(std::memory_order_relaxed);
          failure != CUDA_SUCCESS)
        return failure;
      if (d.record_launches_.load(std::memory_order_relaxed)) {
        Launch launch{function, {gx, gy, gz}, {bx, by, bz}, shared, {}};
        std::lock_guard lock(d.state().launch_mutex);
        const std::vector<size_t>& sizes = d.state().parameter_sizes;
        for (size_t i = 0; i < sizes.size(); ++i) {
          const auto* bytes = static_cast<const unsigned char*>(params[i]);
          launch.parameters.emplace_back(bytes, bytes + sizes[i]);
        }
        d.state().last_launch = std::move(launch);
      }
      d.state().launches.fetch_add(1, std::memory_order_relaxed);
      return enqueue_on(stream);
    };
  }
};

Driver::Driver() : state_(std::make_unique<State>()) {
  Driver* expected = nullptr;
  if (!g_driver.compare_exchange_strong(expected, this))
    throw Error(ErrorCode::InvalidState, "hal's stand-in CUDA driver: one at a time");
  auto api = std::make_shared<CuApi>();
  EntryPoints::install(*api);
  api_ = std::move(api);
}

Driver::~Driver() { g_driver.store(nullptr, std::memory_order_release); }

Device Driver::device() const {
  auto device = std::make_shared<CudaDevice>(api_, 0, describe_device(*api_, 0, "cuda:0"));
  return Device(std::move(device));
}

Kernel Driver::kernel(const Device& device, std::string name, int max_threads) const {
  const auto& cuda = static_cast<const CudaDevice&>(*device.impl());
  // Read by CudaKernel's constructor, below; kernels are made one at a time in tests.
  kernel_max_threads_.store(max_threads, std::memory_order_relaxed);
  return Kernel(std::make_shared<CudaKernel>(
                    std::move(name), cuda, reinterpret_cast<CUmodule>(&state_->module), function()),
                KernelOrigin::compiled);
}

CUfunction Driver::function() const { return reinterpret_cast<CUfunction>(&state_->function); }

void Driver::defer_completion(bool deferred) {
  state_->deferred = deferred;
  if (!deferred) EntryPoints::synchronize();
}

void Driver::complete() { EntryPoints::synchronize(); }

Counts Driver::counts() const {
  const State& s = *state_;
  return {s.launches.load(),        s.enqueued.load(),        s.events_created.load(),
          s.events_live.load(),     s.event_records.load(),   s.event_queries.load(),
          s.context_queries.load(), s.allocations_live.load()};
}

void Driver::record_launches(std::vector<size_t> parameter_sizes) {
  {
    std::lock_guard lock(state_->launch_mutex);
    state_->parameter_sizes = std::move(parameter_sizes);
  }
  record_launches_ = true;
}

Launch Driver::last_launch() const {
  std::lock_guard lock(state_->launch_mutex);
  return state_->last_launch;
}

}  // namespace hal::cuda::stand_in
