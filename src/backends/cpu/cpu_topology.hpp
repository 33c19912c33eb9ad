// What the host processor is: read from hwloc, cpuid, /proc and /sys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hal/device_info.hpp"

namespace hal::cpu {

struct CpuTopology {
  std::string vendor;  // "Intel", "AMD", ...
  std::string model;   // the brand string
  uint32_t cores = 0;
  uint32_t hardware_threads = 0;
  uint32_t numa_nodes = 0;
  uint32_t clock_mhz = 0;
  std::vector<CacheInfo> caches;
  std::vector<std::string> isa;  // "sse4.2", "avx2", "avx512f", ... (usable: OS support checked)
  std::string isa_level;         // "x86-64-v3", "aarch64", ...
};

CpuTopology read_cpu_topology();

// Total and available memory of this process's machine, bounded by its cgroup's limit.
struct HostMemory {
  uint64_t total = 0;
  uint64_t available = 0;
  bool measured = false;
};
HostMemory read_host_memory();

// ISA extensions of the processor that the OS lets programs use (cpuid and xgetbv).
std::vector<std::string> detect_isa();

}  // namespace hal::cpu
