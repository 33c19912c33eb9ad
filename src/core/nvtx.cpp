#include "core/nvtx.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hal::trace::detail {
namespace {

struct NvtxLibrary {
  int (*push)(const char*) = nullptr;
  int (*pop)() = nullptr;
  bool all_backends = false;

  NvtxLibrary() {
    const char* named = std::getenv("HAL_NVTX_LIBRARY");
    for (const char* file : {named, "libnvToolsExt.so.1", "libnvToolsExt.so"}) {
      if (file == nullptr || *file == '\0') continue;
      void* library = dlopen(file, RTLD_NOW | RTLD_LOCAL);  // kept open for the process
      if (library == nullptr) continue;
      push = reinterpret_cast<int (*)(const char*)>(dlsym(library, "nvtxRangePushA"));
      pop = reinterpret_cast<int (*)()>(dlsym(library, "nvtxRangePop"));
      if (push && pop) break;
      push = nullptr;
      pop = nullptr;
    }
    const char* which = std::getenv("HAL_NVTX");
    all_backends = which != nullptr && std::strcmp(which, "all") == 0;
  }
};

const NvtxLibrary& nvtx() {
  static const NvtxLibrary library;
  return library;
}

}  // namespace

bool nvtx_ranges_for(std::string_view backend) {
  const NvtxLibrary& n = nvtx();
  return n.push != nullptr && (backend == "cuda" || n.all_backends);
}

void nvtx_push(std::string_view name) {
  char text[128];  // NVTX takes a NUL-terminated message; longer names are cut
  const size_t size = std::min(name.size(), sizeof text - 1);
  if (size > 0) std::memcpy(text, name.data(), size);
  text[size] = '\0';
  nvtx().push(text);
}

void nvtx_pop() { nvtx().pop(); }

}  // namespace hal::trace::detail
