// DLPack's C structures: Debian's dlpack.h (libdlpack-dev), plus the parts DLPack 1.0 added
// where that header is older. Debian 12 ships DLPack 0.6, which lacks the versioned managed
// tensor (DLManagedTensorVersioned) that a consumer asks for with max_version >= (1, 0), and the
// bool type code; both are fixed by the DLPack 1.0 ABI, so they are declared here exactly as
// dlpack.h 1.0 declares them, and only when the installed header does not.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>

#ifndef DLPACK_MAJOR_VERSION  // dlpack.h before 1.0 (DLPACK_VERSION 60 .. 80)

extern "C" {

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

}  // extern "C"

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

namespace hal::python::dlpack {
inline constexpr uint32_t kMajor = 1;
inline constexpr uint32_t kMinor = 0;
}  // namespace hal::python::dlpack

#else

namespace hal::python::dlpack {
inline constexpr uint32_t kMajor = DLPACK_MAJOR_VERSION;
inline constexpr uint32_t kMinor = DLPACK_MINOR_VERSION;
}  // namespace hal::python::dlpack

#endif

namespace hal::python::dlpack {
// kDLBool (DLPack 0.8 and later): one byte per element, 0 or 1.
inline constexpr uint8_t kBoolCode = 6;
}  // namespace hal::python::dlpack
