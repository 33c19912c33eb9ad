// Cores, caches and NUMA nodes from hwloc; vendor and model from cpuid; memory from /proc.
#include "backends/cpu/cpu_topology.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace hal::cpu {
namespace {

bool has(const std::vector<std::string>& isa, const char* name) {
  return std::find(isa.begin(), isa.end(), name) != isa.end();
}

std::string x86_level(const std::vector<std::string>& isa) {
  auto all = [&](std::initializer_list<const char*> names) {
    return std::all_of(names.begin(), names.end(), [&](const char* n) { return has(isa, n); });
  };
  if (all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2", "fma", "bmi2"}))
    return "x86-64-v4";
  if (all({"avx2", "fma", "f16c", "bmi1", "bmi2"})) return "x86-64-v3";
  if (all({"sse4.2", "popcnt"})) return "x86-64-v2";
  return "x86-64";
}

void read_vendor_and_model(CpuTopology& topology) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
    char vendor[13] = {};
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    const std::string id = vendor;
    topology.vendor = id == "GenuineIntel" ? "Intel" : id == "AuthenticAMD" ? "AMD" : id;
  }
  // unsigned in GCC's cpuid.h, int in Clang's.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) >= 0x80000004u) {
    unsigned brand[12] = {};
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002 + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2],
                  &brand[4 * i + 3]);
    std::string model(reinterpret_cast<const char*>(brand), sizeof brand);
    model = model.c_str();  // up to the first NUL
    const size_t first = model.find_first_not_of(' ');
    topology.model = first == std::string::npos ? "" : model.substr(first);
    while (!topology.model.empty() && topology.model.back() == ' ') topology.model.pop_back();
  }
  topology.isa_level = x86_level(topology.isa);
#elif defined(__aarch64__)
  topology.isa_level = "aarch64";
#endif
}

uint32_t read_clock_mhz() {
  std::ifstream max_freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  uint64_t khz = 0;
  if (max_freq >> khz && khz > 0) return static_cast<uint32_t>(khz / 1000);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos)
      return static_cast<uint32_t>(std::stod(line.substr(colon + 1)) + 0.5);
  }
  return 0;
}

void read_hwloc(CpuTopology& topology) {
  hwloc_topology_t handle;
  if (hwloc_topology_init(&handle) != 0) return;
  if (hwloc_topology_load(handle) != 0) {
    hwloc_topology_destroy(handle);
    return;
  }
  auto count = [&](hwloc_obj_type_t type) {
    const int n = hwloc_get_nbobjs_by_type(handle, type);
    return n > 0 ? static_cast<uint32_t>(n) : 0u;
  };
  topology.cores = count(HWLOC_OBJ_CORE);
  topology.hardware_threads = count(HWLOC_OBJ_PU);
  topology.numa_nodes = count(HWLOC_OBJ_NUMANODE);

  for (hwloc_obj_type_t type : {HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
                                HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE}) {
    const uint32_t n = count(type);
    if (n == 0) continue;
    hwloc_obj_t first = hwloc_get_obj_by_type(handle, type, 0);
    const auto& cache = first->attr->cache;
    CacheInfo info;
    info.level = cache.depth;
    info.type = cache.type == HWLOC_OBJ_CACHE_INSTRUCTION ? "instruction"
                : cache.type == HWLOC_OBJ_CACHE_DATA      ? "data"
                                                          : "unified";
    info.size_bytes = cache.size;
    info.line_bytes = cache.linesize;
    info.count = n;
    topology.caches.push_back(info);
  }
  if (topology.model.empty()) {
    hwloc_obj_t package = hwloc_get_obj_by_type(handle, HWLOC_OBJ_PACKAGE, 0);
    if (const char* model = package ? hwloc_obj_get_info_by_name(package, "CPUModel") : nullptr)
      topology.model = model;
    if (const char* vendor = package ? hwloc_obj_get_info_by_name(package, "CPUVendor") : nullptr)
      if (topology.vendor.empty()) topology.vendor = vendor;
  }
  hwloc_topology_destroy(handle);
}

uint64_t read_meminfo_kib(const std::string& text, const std::string& key) {
  const size_t at = text.find(key + ":");
  if (at == std::string::npos) return 0;
  std::istringstream line(text.substr(at + key.size() + 1));
  uint64_t kib = 0;
  line >> kib;
  return kib;
}

// cgroup v2 limit and usage of this process, 0 when unlimited or unknown.
std::pair<uint64_t, uint64_t> read_cgroup_memory() {
  std::ifstream max_file("/sys/fs/cgroup/memory.max");
  std::ifstream current_file("/sys/fs/cgroup/memory.current");
  std::string max_text;
  uint64_t current = 0;
  if (!(max_file >> max_text) || max_text == "max" || !(current_file >> current)) return {0, 0};
  return {std::stoull(max_text), current};
}

}  // namespace

CpuTopology read_cpu_topology() {
  CpuTopology topology;
  topology.isa = detect_isa();
  read_vendor_and_model(topology);
  read_hwloc(topology);
  const uint32_t threads = std::max(1u, std::thread::hardware_concurrency());
  if (topology.hardware_threads == 0) topology.hardware_threads = threads;
  if (topology.cores == 0) topology.cores = topology.hardware_threads;
  if (topology.numa_nodes == 0) topology.numa_nodes = 1;
  if (topology.vendor.empty()) topology.vendor = "unknown";
  if (topology.model.empty()) topology.model = "unknown processor";
  topology.clock_mhz = read_clock_mhz();
  return topology;
}

HostMemory read_host_memory() {
  HostMemory memory;
  std::ifstream file("/proc/meminfo");
  std::stringstream text;
  text << file.rdbuf();
  memory.total = read_meminfo_kib(text.str(), "MemTotal") * 1024;
  memory.available = read_meminfo_kib(text.str(), "MemAvailable") * 1024;
  memory.measured = memory.total > 0;
  auto [limit, used] = read_cgroup_memory();
  if (limit > 0 && limit < memory.total) {
    memory.total = limit;
    memory.available = std::min(memory.available, limit > used ? limit - used : 0);
  }
  return memory;
}

}  // namespace hal::cpu
