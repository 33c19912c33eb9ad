// Processor vendor and ISA extensions through cpuid, with the OS's consent checked by xgetbv.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/cpu_topology.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace hal::cpu {

#if defined(__x86_64__) || defined(__i386__)
namespace {

bool bit(unsigned value, int index) { return (value >> index) & 1u; }

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

}  // namespace

std::vector<std::string> detect_isa() {
  std::vector<std::string> isa;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return isa;
  const unsigned ecx1 = ecx;
  const bool osxsave = bit(ecx1, 27);
  const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;          // XMM and YMM state
  const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;     // and opmask, ZMM state
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;  // tile config and data

  if (bit(ecx1, 19)) isa.push_back("sse4.1");
  if (bit(ecx1, 20)) isa.push_back("sse4.2");
  if (bit(ecx1, 23)) isa.push_back("popcnt");
  if (os_avx && bit(ecx1, 28)) isa.push_back("avx");
  if (os_avx && bit(ecx1, 12)) isa.push_back("fma");
  if (os_avx && bit(ecx1, 29)) isa.push_back("f16c");

  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned ebx7 = ebx, ecx7 = ecx, edx7 = edx, max_sub = eax;
    if (bit(ebx7, 3)) isa.push_back("bmi1");
    if (bit(ebx7, 8)) isa.push_back("bmi2");
    if (os_avx && bit(ebx7, 5)) isa.push_back("avx2");
    if (os_avx512) {
      if (bit(ebx7, 16)) isa.push_back("avx512f");
      if (bit(ebx7, 17)) isa.push_back("avx512dq");
      if (bit(ebx7, 28)) isa.push_back("avx512cd");
      if (bit(ebx7, 30)) isa.push_back("avx512bw");
      if (bit(ebx7, 31)) isa.push_back("avx512vl");
      if (bit(ecx7, 11)) isa.push_back("avx512_vnni");
      if (bit(edx7, 23)) isa.push_back("avx512_fp16");
      if (max_sub >= 1) {
        unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        if (bit(a1, 5)) isa.push_back("avx512_bf16");
      }
    }
    if (os_amx) {
      if (bit(edx7, 24)) isa.push_back("amx_tile");
      if (bit(edx7, 22)) isa.push_back("amx_bf16");
      if (bit(edx7, 25)) isa.push_back("amx_int8");
    }
  }
  std::sort(isa.begin(), isa.end());
  return isa;
}

#else

std::vector<std::string> detect_isa() { return {}; }

#endif

}  // namespace hal::cpu
