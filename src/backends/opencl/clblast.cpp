#include "backends/opencl/clblast.hpp"

#include <dlfcn.h>

#include "hal/error.hpp"

namespace hal::opencl {

const Clblast& Clblast::load() {
  static const auto loaded = []() -> std::pair<std::unique_ptr<Clblast>, std::string> {
    void* library = nullptr;
    for (const char* name : {"libclblast.so.1", "libclblast.so"})
      if ((library = ::dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))) break;
    if (!library) {
      const char* why = ::dlerror();
      return {nullptr, std::string("CLBlast (libclblast.so.1) cannot be opened, so OpenCL "
                                   "devices have no matrix products (Debian: libclblast1): ") +
                           (why ? why : "unknown reason")};
    }
    auto blas = std::make_unique<Clblast>();
    blas->sgemm = reinterpret_cast<decltype(blas->sgemm)>(::dlsym(library, "CLBlastSgemm"));
    blas->dgemm = reinterpret_cast<decltype(blas->dgemm)>(::dlsym(library, "CLBlastDgemm"));
    if (!blas->sgemm || !blas->dgemm)
      return {nullptr, "CLBlast (libclblast.so.1) lacks CLBlastSgemm or CLBlastDgemm"};
    return {std::move(blas), ""};
  }();
  if (!loaded.first) throw Error(ErrorCode::Unsupported, loaded.second);
  return *loaded.first;
}

std::string describe(CLBlastStatusCode status) {
  const char* name = nullptr;
  switch (status) {
    case CLBlastNotImplemented:
      name = "CLBlastNotImplemented";
      break;
    case CLBlastInvalidMatrixA:
      name = "CLBlastInvalidMatrixA";
      break;
    case CLBlastInvalidMatrixB:
      name = "CLBlastInvalidMatrixB";
      break;
    case CLBlastInvalidMatrixC:
      name = "CLBlastInvalidMatrixC";
      break;
    case CLBlastInsufficientMemoryA:
      name = "CLBlastInsufficientMemoryA";
      break;
    case CLBlastInsufficientMemoryB:
      name = "CLBlastInsufficientMemoryB";
      break;
    case CLBlastInsufficientMemoryC:
      name = "CLBlastInsufficientMemoryC";
      break;
    case CLBlastInvalidLeadDimA:
      name = "CLBlastInvalidLeadDimA";
      break;
    case CLBlastInvalidLeadDimB:
      name = "CLBlastInvalidLeadDimB";
      break;
    case CLBlastInvalidLeadDimC:
      name = "CLBlastInvalidLeadDimC";
      break;
    case CLBlastInvalidBatchCount:
      name = "CLBlastInvalidBatchCount";
      break;
    case CLBlastInvalidLocalMemUsage:
      name = "CLBlastInvalidLocalMemUsage";
      break;
    case CLBlastNoDoublePrecision:
      name = "CLBlastNoDoublePrecision";
      break;
    case CLBlastUnknownError:
      name = "CLBlastUnknownError";
      break;
    default:
      break;
  }
  const std::string code = std::to_string(static_cast<int>(status));
  return name ? std::string(name) + " (" + code + ")" : "status " + code;
}

}  // namespace hal::opencl
