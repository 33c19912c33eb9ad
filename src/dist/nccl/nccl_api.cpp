#include "dist/nccl/nccl_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace hal::dist::detail {

std::shared_ptr<const Nccl> Nccl::open(const std::string& path) {
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library) {
    const char* why = ::dlerror();
    throw Error(ErrorCode::BackendUnavailable,
                "NCCL (" + path +
                    ") cannot be opened, so CUDA devices have no NCCL "
                    "collectives (install NCCL, or name it in HAL_NCCL_LIBRARY): " +
                    (why ? why : "unknown reason"));
  }
  auto nccl = std::make_shared<Nccl>();
  nccl->path_ = path;
  std::string missing;
#define HAL_NCCL_LOAD(name)                                                  \
  nccl->name = reinterpret_cast<decltype(&::name)>(::dlsym(library, #name)); \
  if (!nccl->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  HAL_NCCL_FUNCTIONS(HAL_NCCL_LOAD)
#undef HAL_NCCL_LOAD
  if (!missing.empty())
    throw Error(ErrorCode::BackendUnavailable, "NCCL (" + path + ") lacks " + missing);
  nccl->check(nccl->ncclGetVersion(&nccl->version_), path, "ncclGetVersion");
  if (nccl->version_ < kOldestVersion)
    throw Error(ErrorCode::BackendUnavailable,
                "NCCL (" + path + ") is version " + nccl->version_name() +
                    "; hal needs 2.10 or newer (ncclAvg, ncclBfloat16)");
  return nccl;
}

std::shared_ptr<const Nccl> Nccl::load() {
  static const auto loaded = []() -> std::pair<std::shared_ptr<const Nccl>, std::string> {
    const char* named = std::getenv("HAL_NCCL_LIBRARY");
    try {
      return {open(named && *named ? named : "libnccl.so.2"), ""};
    } catch (const Error& error) {
      return {nullptr, error.message()};
    }
  }();
  if (!loaded.first) throw Error(ErrorCode::BackendUnavailable, loaded.second);
  return loaded.first;
}

std::string Nccl::version_name() const {
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z since 2.9 (X * 1000 + Y * 100 + Z before).
  const int major = version_ >= 10000 ? version_ / 10000 : version_ / 1000;
  const int minor = version_ >= 10000 ? version_ / 100 % 100 : version_ / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version_ % 100);
}

std::string_view result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult";
  }
}

std::string Nccl::describe(ncclResult_t result) const {
  const char* text = ncclGetErrorString ? ncclGetErrorString(result) : nullptr;
  return std::string(result_name(result)) + (text ? std::string(": ") + text : std::string()) +
         " (" + std::to_string(static_cast<int>(result)) + ")";
}

void Nccl::check(ncclResult_t result, std::string_view where, std::string_view what) const {
  if (result == ncclSuccess) [[likely]]
    return;
  throw Error(error_code(result),
              std::string(where) + ": " + std::string(what) + " failed: " + describe(result),
              static_cast<int>(result));
}

ErrorCode error_code(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return ErrorCode::Ok;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return ErrorCode::InvalidArgument;
    case ncclUnhandledCudaError:
      return ErrorCode::AsyncFailure;
    case ncclRemoteError:  // a peer failed or went away
      return ErrorCode::DeviceLost;
    case ncclInProgress:
      return ErrorCode::InvalidState;
    default:  // ncclSystemError, ncclInternalError
      return ErrorCode::Internal;
  }
}

}  // namespace hal::dist::detail
