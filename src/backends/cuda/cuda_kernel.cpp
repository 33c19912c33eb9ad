// Compiling portable-dialect and CUDA C++ kernels with NVRTC, through the on-disk kernel cache.
#include "backends/cuda/cuda_kernel.hpp"

#include <sstream>

#include "backends/cuda/nvrtc.hpp"
#include "core/kernel_disk_cache.hpp"
#include "hal/log.hpp"

namespace hal::cuda {

const char* const kPortablePrelude = R"(// hal portable kernel dialect: CUDA C++
#define HAL_CUDA 1
#define KERNEL extern "C" __global__
#define GLOBAL
#define SHARED __shared__
#define DEVICE_FN __device__ static inline
#define RESTRICT __restrict__
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long long ulong;
__device__ static inline size_t hal_pick(unsigned x, unsigned y, unsigned z, int d) {
  return d == 0 ? x : d == 1 ? y : z;
}
#define local_id(d) hal_pick(threadIdx.x, threadIdx.y, threadIdx.z, (d))
#define group_id(d) hal_pick(blockIdx.x, blockIdx.y, blockIdx.z, (d))
#define local_size(d) hal_pick(blockDim.x, blockDim.y, blockDim.z, (d))
#define num_groups(d) hal_pick(gridDim.x, gridDim.y, gridDim.z, (d))
#define global_id(d) (group_id(d) * local_size(d) + local_id(d))
#define global_size(d) (num_groups(d) * local_size(d))
#define barrier() __syncthreads()
#line 1
)";

namespace {

// The function's own limit on threads a block, or the device's where the driver does not say.
uint32_t max_threads_of(const CuApi& api, CUfunction function, const CudaDevice& device) {
  int threads = 0;
  if (api.cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function) ==
          CUDA_SUCCESS &&
      threads > 0)
    return static_cast<uint32_t>(threads);
  return device.info().limits.max_work_group_size;
}

}  // namespace

CudaKernel::CudaKernel(std::string name, const CudaDevice& device, CUmodule module,
                       CUfunction function)
    : KernelImpl(std::move(name), &device),
      api_(device.api_ptr()),
      module_(module),
      function_(function),
      max_threads_(max_threads_of(*api_, function, device)) {}

CudaKernel::~CudaKernel() { api_->cuModuleUnload(module_); }

CUresult CudaKernel::allow_shared_bytes(uint32_t bytes) {
  uint32_t allowed = shared_allowed_.load(std::memory_order_relaxed);
  if (bytes <= allowed) return CUDA_SUCCESS;
  const CUresult result = api_->cuFuncSetAttribute(
      function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes));
  if (result == CUDA_SUCCESS) {
    while (allowed < bytes && !shared_allowed_.compare_exchange_weak(allowed, bytes)) {
    }
  }
  return result;
}

namespace {

// The shared NVRTC, opened on first compile; the reason it could not be opened otherwise.
std::shared_ptr<const Nvrtc> shared_nvrtc(std::string& why) {
  static const auto loaded = [] {
    std::pair<std::shared_ptr<const Nvrtc>, std::string> out;
    try {
      out.first = Nvrtc::load();
    } catch (const Error& error) {
      out.second = error.message();
    }
    return out;
  }();
  why = loaded.second;
  return loaded.first;
}

std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  std::vector<std::string> out;
  for (const std::string& define : options.defines) out.push_back("-D" + define);
  std::istringstream flags(options.flags);
  for (std::string flag; flags >> flag;) out.push_back(flag);
  return out;
}

// Everything that changes the module, but for #include'd files: a kernel that reads any is not
// kept on disk (detail::disk_cache_refusal). Stored whole in the entry and compared on load.
std::string cache_key(const CudaDevice& device, const Nvrtc& nvrtc, const KernelSource& source,
                      const std::vector<std::string>& options, const std::string& code) {
  std::string key = "hal-cuda-module/1\ndevice: " + device.info().name + " " +
                    device.info().architecture + "\ndriver: " + device.info().driver_version +
                    "\nnvrtc: " + nvrtc.version() + "\nkernel: " + source.name + "\noptions:";
  for (const std::string& option : options) key += " " + option;
  return key + "\nsource:\n" + code;
}

// Payload of a cache entry: the kernel's symbol, a NUL, then the image.
std::vector<unsigned char> pack(const NvrtcOutput& output) {
  std::vector<unsigned char> payload(output.lowered_name.begin(), output.lowered_name.end());
  payload.push_back(0);
  payload.insert(payload.end(), output.image.begin(), output.image.end());
  return payload;
}

bool unpack(const std::vector<unsigned char>& payload, NvrtcOutput& output) {
  auto nul = std::find(payload.begin(), payload.end(), 0);
  if (nul == payload.end() || nul + 1 == payload.end()) return false;
  output.lowered_name.assign(payload.begin(), nul);
  output.image.assign(nul + 1, payload.end());
  output.ok = true;
  return true;
}

// Loads `image` into the device's context; null when the driver refuses it.
std::shared_ptr<KernelImpl> load(const CudaDevice& device, const std::string& name,
                                 const NvrtcOutput& output, CUresult& result) {
  const CuApi& api = device.api();
  device.make_current();
  CUmodule module = nullptr;
  result = api.cuModuleLoadData(&module, output.image.data());
  if (result != CUDA_SUCCESS) return nullptr;
  CUfunction function = nullptr;
  result = api.cuModuleGetFunction(&function, module, output.lowered_name.c_str());
  if (result != CUDA_SUCCESS) {
    api.cuModuleUnload(module);
    return nullptr;
  }
  return std::make_shared<CudaKernel>(name, device, module, function);
}

}  // namespace

CompiledKernel CudaDevice::compile(const KernelSource& source, const CompileOptions& options) {
  const std::string where = "compile of " + std::string(to_string(source.language)) + " kernel '" +
                            source.name + "' for " + describe(*this);
  if (source.language == KernelLanguage::opencl_c)
    throw_unsupported(*this, "OpenCL C kernels ('" + source.name +
                                 "'); write it in the portable dialect or CUDA C++");
  std::string why;
  std::shared_ptr<const Nvrtc> nvrtc = shared_nvrtc(why);
  if (!nvrtc) throw_unsupported(*this, "compiling kernels: " + why);

  const std::string code =
      source.language == KernelLanguage::portable ? kPortablePrelude + source.code : source.code;
  const std::vector<std::string> flags = nvrtc_options(options);
  const std::string key = cache_key(*this, *nvrtc, source, flags, code);
  const detail::KernelDiskCache disk("cuda");
  CUresult result = CUDA_SUCCESS;
  const bool use_disk = detail::may_use_disk_cache(options.disk_cache, code, options.flags, where);

  if (use_disk) {
    if (auto payload = disk.load(key)) {
      NvrtcOutput cached;
      if (unpack(*payload, cached))
        if (auto kernel = load(*this, source.name, cached, result)) return {kernel, true};
      log(LogLevel::warn, where + ": the driver refused the cached module " +
                              disk.entry_path(key).string() + "; rebuilding from source");
      disk.remove(key);
    }
  }
  NvrtcOutput output = nvrtc->compile(code, source.name, traits_.arch, flags);
  if (!output.ok) {
    std::string shown;
    for (const std::string& flag : flags) shown += (shown.empty() ? "" : " ") + flag;
    throw Error(output.missing_kernel ? ErrorCode::NotFound : ErrorCode::CompileFailed,
                where + " failed (NVRTC " + nvrtc->version() + ", " + info_.architecture +
                    ")\noptions: " + (shown.empty() ? "(none)" : shown) + "\nbuild log:\n" +
                    output.log);
  }
  auto kernel = load(*this, source.name, output, result);
  if (!kernel) api_->throw_result(result, where, "cuModuleLoadData / cuModuleGetFunction");
  if (use_disk) disk.store(key, pack(output));
  return {kernel, false};
}

}  // namespace hal::cuda
