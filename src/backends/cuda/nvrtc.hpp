// NVRTC, CUDA's run-time compiler, read from libnvrtc.so at run time: CUDA C++ to a cubin for
// one GPU architecture. Needs no GPU, so it is tested wherever the toolkit is installed.
#pragma once

#include <nvrtc.h>

#include <memory>
#include <string>
#include <vector>

#define HAL_NVRTC_FUNCTIONS(X) \
  X(nvrtcGetErrorString)       \
  X(nvrtcVersion)              \
  X(nvrtcGetNumSupportedArchs) \
  X(nvrtcGetSupportedArchs)    \
  X(nvrtcCreateProgram)        \
  X(nvrtcDestroyProgram)       \
  X(nvrtcCompileProgram)       \
  X(nvrtcGetPTXSize)           \
  X(nvrtcGetPTX)               \
  X(nvrtcGetCUBINSize)         \
  X(nvrtcGetCUBIN)             \
  X(nvrtcGetProgramLogSize)    \
  X(nvrtcGetProgramLog)        \
  X(nvrtcAddNameExpression)    \
  X(nvrtcGetLoweredName)

namespace hal::cuda {

// What one compilation produced. `ok` false: `log` says why and `image` is empty.
struct NvrtcOutput {
  bool ok = false;
  std::string log;
  std::string image;  // a cubin, or PTX text (NUL-terminated) for the driver to finish
  bool is_cubin = false;
  std::string lowered_name;  // the symbol of the requested kernel in the image
  // The source compiles but declares no kernel of the requested name (NVRTC reports that as
  // an error of the name expression it is given for the kernel).
  bool missing_kernel = false;
};

class Nvrtc {
 public:
  // Opens libnvrtc.so.<major> (newest first) or libnvrtc.so. Throws BackendUnavailable.
  static std::shared_ptr<const Nvrtc> load();

  std::string version() const;            // "13.0"
  const std::vector<int>& archs() const;  // the sm_XY it can emit cubins for, as XY, ascending

  // Compiles `code` and finds `kernel` in it (a plain name, or a C++ expression such as
  // "scale<float>"). For an architecture NVRTC knows, a cubin for sm_<arch>; for a newer one,
  // PTX for the newest it knows, which the driver compiles on load.
  NvrtcOutput compile(const std::string& code, const std::string& kernel, int arch,
                      const std::vector<std::string>& options) const;

 private:
#define HAL_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  HAL_NVRTC_FUNCTIONS(HAL_NVRTC_MEMBER)
#undef HAL_NVRTC_MEMBER
  int major_ = 0, minor_ = 0;
  std::vector<int> archs_;
};

}  // namespace hal::cuda
