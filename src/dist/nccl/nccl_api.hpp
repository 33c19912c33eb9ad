// NCCL, read from libnccl.so.2 at run time (as cuBLAS is): the entry points hal calls, the
// library's version, and the translation of ncclResult_t into hal::Error. Opening it needs no
// GPU, so it is tested wherever the library is installed.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>
#include <string_view>

#include "hal/error.hpp"

namespace hal::dist::detail {

// X(name): the functions hal calls, each with the type of its declaration in nccl.h.
// clang-format off
#define HAL_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy) X(ncclCommAbort) \
  X(ncclCommGetAsyncError) X(ncclGetErrorString) X(ncclAllReduce) X(ncclBroadcast) \
  X(ncclReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclSend) X(ncclRecv) \
  X(ncclGroupStart) X(ncclGroupEnd)
// clang-format on

class Nccl {
 public:
  // The oldest NCCL hal takes: 2.10 brought ncclAvg and ncclBfloat16.
  static constexpr int kOldestVersion = 21000;

  // libnccl.so.2 (or HAL_NCCL_LIBRARY), once per process; the failure, too, is remembered.
  static std::shared_ptr<const Nccl> load();
  // The library at `path`: BackendUnavailable naming it and why it did not open, the entry
  // points it lacks, or a version older than 2.10.
  static std::shared_ptr<const Nccl> open(const std::string& path);

  int version() const { return version_; }  // 22803 for 2.28.3
  std::string version_name() const;         // "2.28.3"
  const std::string& path() const { return path_; }

  // "ncclInvalidUsage: invalid usage (5)".
  std::string describe(ncclResult_t result) const;
  void check(ncclResult_t result, std::string_view where, std::string_view what) const;

#define HAL_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  HAL_NCCL_FUNCTIONS(HAL_NCCL_MEMBER)
#undef HAL_NCCL_MEMBER

 private:
  int version_ = 0;
  std::string path_;
};

// The hal ErrorCode an ncclResult_t stands for.
ErrorCode error_code(ncclResult_t result);
// ncclResult_t's enumerator name ("ncclRemoteError").
std::string_view result_name(ncclResult_t result);

}  // namespace hal::dist::detail
