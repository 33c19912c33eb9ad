// libFuzzer target: reading a kernel's declared signature from source. Any text, in every
// language, gives a signature or none; it never crashes, hangs or reads out of bounds, and a
// signature it gives holds only what launches can be checked against.
#include <cstdlib>
#include <string>

#include "core/declared_signature.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte picks the language and the entry point's name; the rest is the source.
  if (size == 0) return 0;
  const auto language = static_cast<hal::KernelLanguage>(data[0] % 4);
  const std::string code(reinterpret_cast<const char*>(data + 1), size - 1);
  for (const char* name : {"f", "saxpy"}) {
    const auto params = hal::detail::declared_params({name, code, language},
                                                     {.defines = {"T=float"}, .flags = "-DU=int"});
    if (!params) continue;
    for (const hal::KernelParam& param : *params)
      if (param.kind != hal::KernelArg::Kind::scalar && param.scalar_bytes != 0) std::abort();
  }
  return 0;
}
