// cpu:0's facts, checked against what Linux itself reports.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "hal/hal.hpp"

namespace hal {
namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream file("/proc/cpuinfo");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string flag; words >> flag;) flags.insert(flag);
    return flags;
  }
  return {};
}

uint64_t meminfo_bytes(const std::string& key) {
  std::ifstream file("/proc/meminfo");
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (file >> name >> kib >> unit)
    if (name == key + ":") return kib * 1024;
  return 0;
}

TEST(CpuDevice, IsaMatchesProcCpuinfo) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "ISA detection is checked on x86-64 only";
#endif
  const auto flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  const DeviceInfo& info = device("cpu:0").info();
  // hal name -> Linux flag name
  for (auto [ours, linux_name] :
       std::vector<std::pair<std::string, std::string>>{{"sse4.2", "sse4_2"},
                                                        {"avx", "avx"},
                                                        {"avx2", "avx2"},
                                                        {"fma", "fma"},
                                                        {"f16c", "f16c"},
                                                        {"avx512f", "avx512f"},
                                                        {"avx512bw", "avx512bw"},
                                                        {"avx512vl", "avx512vl"},
                                                        {"avx512_vnni", "avx512_vnni"},
                                                        {"avx512_bf16", "avx512_bf16"},
                                                        {"avx512_fp16", "avx512_fp16"},
                                                        {"amx_tile", "amx_tile"}}) {
    EXPECT_EQ(info.has_feature(ours), flags.count(linux_name) == 1) << ours;
  }
}

TEST(CpuDevice, DescribesTheHost) {
  const DeviceInfo& info = device("cpu:0").info();
  EXPECT_EQ(info.id, "cpu:0");
  EXPECT_EQ(info.kind, DeviceKind::cpu);
  EXPECT_FALSE(info.name.empty());
  EXPECT_FALSE(info.vendor.empty());
  EXPECT_NE(info.driver_version.find("Linux"), std::string::npos) << info.driver_version;
#if defined(__x86_64__)
  EXPECT_EQ(info.architecture.rfind("x86-64", 0), 0u) << info.architecture;
#endif
  EXPECT_GE(info.compute_units, 1u);
  EXPECT_LE(info.compute_units, std::thread::hardware_concurrency());
  EXPECT_GE(info.numa_nodes, 1u);
  for (DType dtype : kAllDTypes) EXPECT_TRUE(info.supports(dtype)) << to_string(dtype);
  for (std::string_view name : {feature::kFp64, feature::kHostKernels, feature::kUnifiedMemory})
    EXPECT_TRUE(info.has_feature(name)) << name;
}

TEST(CpuDevice, MemoryIsMeasuredFromTheKernel) {
  const Device cpu = device("cpu:0");
  const DeviceInfo& info = cpu.info();
  EXPECT_EQ(info.memory_total.provenance, Provenance::measured);
  const uint64_t total = meminfo_bytes("MemTotal");
  EXPECT_GT(info.memory_total.bytes, 0u);
  EXPECT_LE(info.memory_total.bytes, total);  // the cgroup limit may be lower
  const MemoryFigure free = cpu.memory_free();
  EXPECT_EQ(free.provenance, Provenance::measured);
  EXPECT_GT(free.bytes, 0u);
  EXPECT_LE(free.bytes, info.memory_total.bytes);
  EXPECT_EQ(info.limits.max_allocation_bytes, info.memory_total.bytes);
}

TEST(CpuDevice, ReportsCaches) {
  const DeviceInfo& info = device("cpu:0").info();
  if (info.caches.empty()) GTEST_SKIP() << "hwloc found no caches on this machine";
  bool has_l1_data = false;
  for (const CacheInfo& cache : info.caches) {
    EXPECT_GE(cache.level, 1u);
    EXPECT_GT(cache.size_bytes, 0u);
    EXPECT_GE(cache.count, 1u);
    EXPECT_TRUE(cache.type == "data" || cache.type == "instruction" || cache.type == "unified");
    has_l1_data = has_l1_data || (cache.level == 1 && cache.type != "instruction");
  }
  EXPECT_TRUE(has_l1_data);
}

TEST(CpuDevice, UuidIsStableAcrossLookups) {
  const std::string uuid = device("cpu:0").info().uuid;
  EXPECT_EQ(uuid.size(), 36u);
  EXPECT_EQ(device(uuid.substr(0, 6)).info().uuid, uuid);
}

// The VmFlags of the mapping that holds `address` (/proc/self/smaps), or "" if none does.
std::string vm_flags_at(uintptr_t address) {
  std::ifstream file("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(file, line);) {
    uintptr_t low = 0, high = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> low >> dash >> high && dash == '-') {
      inside = low <= address && address < high;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8);
    }
  }
  return "";
}

TEST(CpuDevice, LargeBuffersAskForHugePagesInside) {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  if (modes.empty() || modes.find("[never]") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages are off or absent in this kernel (" << modes << ")";
  const Device cpu0 = device("cpu:0");
  const size_t bytes = size_t{64} << 20;
  const Buffer buffer = cpu0.allocate(bytes, MemoryKind::device, AllocationMode::direct);
  const auto begin = reinterpret_cast<uintptr_t>(buffer.data<char>());
  const uintptr_t huge = uintptr_t{2} << 20;
  const uintptr_t inside = (begin + huge - 1) / huge * huge;  // the first whole huge page
  const std::string flags = vm_flags_at(inside);
  ASSERT_FALSE(flags.empty()) << "no mapping in /proc/self/smaps holds the buffer";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << "VmFlags:" << flags;
  // The buffer works as any other: written and read back whole.
  std::memset(buffer.data<char>(), 7, bytes);
  EXPECT_EQ(buffer.data<char>()[bytes - 1], 7);
}

}  // namespace
}  // namespace hal
