#include "backends/cuda/nvrtc.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <sstream>

#include "hal/error.hpp"

namespace hal::cuda {
namespace {

void* open_nvrtc() {
  // Newest first: a newer NVRTC knows more architectures.
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
    if (void* library = ::dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) return library;
  }
  return nullptr;
}

// Frees an nvrtcProgram on every path out of compile().
struct ProgramGuard {
  decltype(&::nvrtcDestroyProgram) destroy;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) destroy(&program);
  }
};

}  // namespace

std::shared_ptr<const Nvrtc> Nvrtc::load() {
  void* library = open_nvrtc();
  if (!library)
    throw Error(ErrorCode::BackendUnavailable,
                "NVRTC (libnvrtc.so.13 or .12) cannot be opened: kernels cannot be compiled for "
                "CUDA devices (install the CUDA toolkit's NVRTC, or add its lib folder to "
                "LD_LIBRARY_PATH)");
  auto nvrtc = std::make_shared<Nvrtc>();
  std::string missing;
#define HAL_NVRTC_LOAD(name)                                                  \
  nvrtc->name = reinterpret_cast<decltype(&::name)>(::dlsym(library, #name)); \
  if (!nvrtc->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  HAL_NVRTC_FUNCTIONS(HAL_NVRTC_LOAD)
#undef HAL_NVRTC_LOAD
  if (!missing.empty())
    throw Error(ErrorCode::BackendUnavailable, "NVRTC is too old: it lacks " + missing);
  nvrtc->nvrtcVersion(&nvrtc->major_, &nvrtc->minor_);
  int count = 0;
  if (nvrtc->nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    nvrtc->archs_.resize(static_cast<size_t>(count));
    nvrtc->nvrtcGetSupportedArchs(nvrtc->archs_.data());
    std::sort(nvrtc->archs_.begin(), nvrtc->archs_.end());
  }
  return nvrtc;
}

std::string Nvrtc::version() const { return std::to_string(major_) + "." + std::to_string(minor_); }

const std::vector<int>& Nvrtc::archs() const { return archs_; }

namespace {

// NVRTC reports a kernel the source does not declare as errors of the name expression hal adds
// for it ("__nv_name_map(2): error: identifier "k" is undefined"): true when those are all the
// log's errors.
bool only_the_name_expression_failed(const std::string& log, const std::string& kernel) {
  if (log.find("identifier \"" + kernel + "\" is undefined") == std::string::npos) return false;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(": error") != std::string::npos && !line.starts_with("__nv_name_map"))
      return false;
  return true;
}

}  // namespace

NvrtcOutput Nvrtc::compile(const std::string& code, const std::string& kernel, int arch,
                           const std::vector<std::string>& options) const {
  NvrtcOutput out;
  const bool known = std::find(archs_.begin(), archs_.end(), arch) != archs_.end();
  if (!known && (archs_.empty() || arch < archs_.front())) {
    out.log = "NVRTC " + version() + " cannot compile for sm_" + std::to_string(arch) +
              (archs_.empty() ? ""
                              : " (it supports sm_" + std::to_string(archs_.front()) + " to sm_" +
                                    std::to_string(archs_.back()) + ")");
    return out;
  }
  const int target = known ? arch : archs_.back();
  out.is_cubin = known;

  ProgramGuard guard{nvrtcDestroyProgram};
  nvrtcResult result = nvrtcCreateProgram(&guard.program, code.c_str(), (kernel + ".cu").c_str(), 0,
                                          nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    out.log = std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(result);
    return out;
  }
  nvrtcAddNameExpression(guard.program, kernel.c_str());

  std::vector<std::string> all = {
      (known ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") + std::to_string(target),
      "--std=c++17", "--device-as-default-execution-space"};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& option : all) argv.push_back(option.c_str());
  result = nvrtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());

  size_t log_size = 0;
  nvrtcGetProgramLogSize(guard.program, &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(guard.program, out.log.data());
    out.log.resize(log_size - 1);  // the terminating NUL
  }
  if (result != NVRTC_SUCCESS) {
    if (out.log.empty()) out.log = nvrtcGetErrorString(result);
    out.missing_kernel = only_the_name_expression_failed(out.log, kernel);
    if (out.missing_kernel) out.log = "the program has no kernel '" + kernel + "'\n" + out.log;
    return out;
  }

  const char* lowered = nullptr;
  if (nvrtcGetLoweredName(guard.program, kernel.c_str(), &lowered) != NVRTC_SUCCESS || !lowered) {
    out.log +=
        (out.log.empty() ? "" : "\n") + std::string("the program has no kernel '") + kernel + "'";
    out.missing_kernel = true;
    return out;
  }
  out.lowered_name = lowered;

  size_t size = 0;
  if (known) {
    nvrtcGetCUBINSize(guard.program, &size);
    out.image.resize(size);
    nvrtcGetCUBIN(guard.program, out.image.data());
  } else {
    nvrtcGetPTXSize(guard.program, &size);
    out.image.resize(size);
    nvrtcGetPTX(guard.program, out.image.data());
  }
  out.ok = !out.image.empty();
  if (!out.ok) out.log += "NVRTC produced an empty image";
  return out;
}

}  // namespace hal::cuda
