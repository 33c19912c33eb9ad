// The CUDA baseline: the driver API called directly (through the entry points hal reads from
// libcuda.so.1, so that no CUDA library is linked), on the primary context of the same device.
#include <stdexcept>
#include <string>

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "raw_baseline.hpp"

namespace hal::bench {
namespace {

class RawCuda final : public RawBaseline {
 public:
  explicit RawCuda(size_t index) : api_(cuda::CuApi::load()) {
    ok(api_->cuDeviceGet(&device_, static_cast<int>(index)), "cuDeviceGet");
    ok(api_->cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    ok(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    ok(api_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    int major = 0, minor = 0;
    api_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
    api_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
    const cuda::NvrtcOutput empty = cuda::Nvrtc::load()->compile(
        "extern \"C\" __global__ void empty() {}", "empty", major * 10 + minor, {});
    if (!empty.ok) throw std::runtime_error("raw CUDA baseline: NVRTC: " + empty.log);
    ok(api_->cuModuleLoadData(&module_, empty.image.data()), "cuModuleLoadData");
    ok(api_->cuModuleGetFunction(&function_, module_, empty.lowered_name.c_str()),
       "cuModuleGetFunction");
  }
  ~RawCuda() override {
    api_->cuCtxSetCurrent(context_);
    for (CUdeviceptr buffer : buffers_)
      if (buffer) api_->cuMemFree(buffer);
    api_->cuModuleUnload(module_);
    api_->cuStreamDestroy(stream_);
    api_->cuDevicePrimaryCtxRelease(device_);
  }

  void enqueue_empty() override {
    ok(api_->cuLaunchKernel(function_, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
       "cuLaunchKernel");
  }
  void finish() override { ok(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize"); }
  void write(const void* src, size_t bytes) override {
    reserve(bytes);
    ok(api_->cuMemcpyHtoDAsync(buffers_[0], src, bytes, stream_), "cuMemcpyHtoDAsync");
    finish();
  }
  void read(void* dst, size_t bytes) override {
    reserve(bytes);
    ok(api_->cuMemcpyDtoHAsync(dst, buffers_[0], bytes, stream_), "cuMemcpyDtoHAsync");
    finish();
  }
  // On the baseline's stream, as hal's copy is on its own: cuMemcpyDtoD would go through the
  // legacy default stream.
  void copy_on_device(size_t bytes) override {
    reserve(bytes);
    ok(api_->cuMemcpyDtoDAsync(buffers_[1], buffers_[0], bytes, stream_), "cuMemcpyDtoDAsync");
    finish();
  }

 private:
  void ok(CUresult result, const char* what) const {
    if (result != CUDA_SUCCESS)
      throw std::runtime_error(std::string("raw CUDA baseline: ") + what +
                               " failed: " + api_->describe(result));
  }
  void reserve(size_t bytes) {
    if (buffer_size_ >= bytes) return;
    for (CUdeviceptr& buffer : buffers_) {
      if (buffer) api_->cuMemFree(buffer);
      buffer = 0;
      ok(api_->cuMemAlloc(&buffer, bytes), "cuMemAlloc");
    }
    buffer_size_ = bytes;
  }

  std::shared_ptr<const cuda::CuApi> api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUdeviceptr buffers_[2] = {0, 0};
  size_t buffer_size_ = 0;
};

}  // namespace

std::unique_ptr<RawBaseline> make_cuda_baseline(size_t index) {
  return std::make_unique<RawCuda>(index);
}

}  // namespace hal::bench
