// Which vector kernels run: the best instruction set this processor has (cpuid, with the OS's
// consent to the wide registers, as cpu_isa.cpp reads it), or HAL_CPU_ISA's choice.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/cpu_topology.hpp"
#include "hal/error.hpp"
#include "ops/simd/simd_kernels.hpp"

namespace hal::ops::simd {
namespace {

constexpr const char* kChoices = "avx512, avx2, sse4 or scalar";

bool has(const std::vector<std::string>& isa, const char* feature) {
  return std::find(isa.begin(), isa.end(), feature) != isa.end();
}

// What each table is compiled for (Highway's AVX3, AVX2 and SSE4 targets).
bool processor_runs(Isa isa) {
  static const std::vector<std::string> features = cpu::detect_isa();
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::sse4:
      return has(features, "sse4.2");
    case Isa::avx2:
      return has(features, "avx2") && has(features, "fma") && has(features, "f16c") &&
             has(features, "bmi2");
    case Isa::avx512:
      return processor_runs(Isa::avx2) && has(features, "avx512f") && has(features, "avx512bw") &&
             has(features, "avx512dq") && has(features, "avx512vl");
  }
  return false;
}

Isa choose() {
  const char* forced = std::getenv("HAL_CPU_ISA");
  if (forced == nullptr || *forced == '\0') return best_isa();
  const Isa isa = parse_isa(forced);
  if (!supported(isa))
    throw Error(ErrorCode::Unsupported, "HAL_CPU_ISA=" + std::string(forced) +
                                            ": this processor (or this build) has no " +
                                            std::string(name(isa)) + " kernels; it runs " +
                                            std::string(name(best_isa())) + " and below");
  return isa;
}

}  // namespace

std::string_view name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::sse4:
      return "sse4";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

Isa parse_isa(std::string_view value) {
  for (Isa isa : {Isa::scalar, Isa::sse4, Isa::avx2, Isa::avx512})
    if (value == name(isa)) return isa;
  throw Error(ErrorCode::InvalidArgument, "HAL_CPU_ISA=" + std::string(value) +
                                              ": unknown instruction set (it takes " + kChoices +
                                              ")");
}

bool supported(Isa isa) {
  return isa == Isa::scalar || (processor_runs(isa) && kernels(isa) != nullptr);
}

Isa best_isa() {
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::sse4})
    if (supported(isa)) return isa;
  return Isa::scalar;
}

Isa active_isa() {
  // A throwing initialiser leaves the static unset: every call reports the bad value again.
  static const Isa chosen = choose();
  return chosen;
}

const Kernels* active() {
  static const Kernels* table = kernels(active_isa());
  return table;
}

}  // namespace hal::ops::simd
