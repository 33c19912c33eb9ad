#include "backends/cpu/cpu_device.hpp"

#include <sys/mman.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>

#include "backends/cpu/cpu_buffer.hpp"
#include "backends/cpu/cpu_event.hpp"
#include "backends/cpu/cpu_stream.hpp"
#include "backends/cpu/cpu_topology.hpp"
#include "core/uuid.hpp"
#include "hal/units.hpp"

namespace hal::cpu {
namespace {

std::string kernel_version() {
  utsname name{};
  if (uname(&name) != 0) return "unknown";
  return std::string(name.sysname) + " " + name.release;
}

// Stable for one machine and processor: the machine id (or host name) and the model.
std::string machine_identity() {
  std::ifstream file("/etc/machine-id");
  std::string id;
  if (file >> id && !id.empty()) return id;
  utsname name{};
  return uname(&name) == 0 ? name.nodename : "unknown-host";
}

// f32 operations per cycle and core: two FMA pipes of the widest vector unit the OS enables.
double f32_flops_per_cycle(const std::vector<std::string>& isa) {
  const auto has = [&](std::string_view name) {
    return std::find(isa.begin(), isa.end(), name) != isa.end();
  };
  if (has("avx512f")) return 2 * 2 * 16;
  if (has("avx2") && has("fma")) return 2 * 2 * 8;
  if (has("avx")) return 2 * 8;  // separate add and multiply pipes
  return 2 * 4;
}

DeviceInfo describe(const CpuTopology& topology, const HostMemory& memory) {
  DeviceInfo info;
  info.id = "cpu:0";
  info.uuid = name_based_uuid(machine_identity() + "/cpu/" + topology.model);
  info.name = topology.model;
  info.vendor = topology.vendor;
  info.kind = DeviceKind::cpu;
  info.architecture = topology.isa_level.empty() ? "unknown" : topology.isa_level;
  info.driver_version = kernel_version();
  const Provenance provenance = memory.measured ? Provenance::measured : Provenance::unknown;
  info.memory_total = {memory.total, provenance};
  info.memory_free = {memory.available, provenance};
  info.compute_units = topology.cores;
  info.clock_mhz = topology.clock_mhz;
  info.numa_nodes = topology.numa_nodes;
  info.dtypes.assign(std::begin(kAllDTypes), std::end(kAllDTypes));
  info.features = topology.isa;
  for (std::string_view name :
       {feature::kFp16, feature::kBf16, feature::kFp64, feature::kUnifiedMemory,
        feature::kPinnedHostMemory, feature::kHostKernels})
    info.features.emplace_back(name);
  std::sort(info.features.begin(), info.features.end());
  info.limits.max_allocation_bytes = memory.total;
  info.limits.max_work_group_size = 4096;
  info.limits.max_work_group_dims = {4096, 4096, 4096};
  info.caches = topology.caches;
  info.peak.f32_gflops =
      topology.cores * (topology.clock_mhz / 1e3) * f32_flops_per_cycle(topology.isa);
  return info;
}

// Buffers of 4 MiB and more ask for transparent huge pages over the whole 2 MiB pages inside
// them, as NumPy's arrays do: over 4 KiB pages a stream misses the TLB at every page and the
// hardware prefetchers stop at each page's end (a cold 64 MiB row sum took twice PyTorch's time
// on the same values), and where THP is "madvise", Debian's default, nothing else gets them.
// The start stays where malloc puts it: a 2 MiB-aligned start slowed the allocator's 16 MiB
// touch benchmark by a third and made glibc map and unmap such blocks each time.
// The advice is only that: refused (no THP in the kernel), the buffer works as before.
constexpr size_t kHugePage = size_t{2} << 20;

void* allocate_host(size_t bytes) {
  const size_t rounded =
      (bytes + CpuBuffer::kAlignment - 1) / CpuBuffer::kAlignment * CpuBuffer::kAlignment;
  if (rounded < bytes) return nullptr;  // overflow: no such buffer
  void* data = std::aligned_alloc(CpuBuffer::kAlignment, rounded);
  if (!data || bytes < 2 * kHugePage) return data;
  // The whole huge pages inside the buffer (madvise wants a page-aligned start).
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHugePage - 1) / kHugePage * kHugePage;
  const uintptr_t last = (begin + bytes) / kHugePage * kHugePage;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  return data;
}

}  // namespace

CpuDevice::CpuDevice()
    : info_(describe(read_cpu_topology(), read_host_memory())),
      pool_(std::make_shared<ThreadPool>(std::max(1u, std::thread::hardware_concurrency()))) {}

MemoryFigure CpuDevice::memory_free() const {
  const HostMemory memory = read_host_memory();
  return {memory.available, memory.measured ? Provenance::measured : Provenance::unknown};
}

BufferPtr CpuDevice::allocate(size_t bytes, MemoryKind kind) {
  void* data = allocate_host(bytes);
  if (!data) {
    const MemoryFigure free = memory_free();
    throw Error(ErrorCode::OutOfMemory,
                "allocate on " + info_.id + ": the system refused " + std::to_string(bytes) +
                    " bytes (" + format_bytes(bytes) + ") of " + std::string(to_string(kind)) +
                    " memory; total " + format_bytes(info_.memory_total.bytes) + ", free " +
                    format_memory(free) + "; free some buffers or ask for less");
  }
  try {
    return std::make_shared<CpuBuffer>(shared_from_this(), bytes, kind, data);
  } catch (...) {  // the buffer's own allocation failed: it never took the memory
    std::free(data);
    throw;
  }
}

BufferPtr CpuDevice::wrap_native(void* data, size_t bytes, std::function<void()> release) {
  return std::make_shared<CpuBuffer>(shared_from_this(), bytes, data, std::move(release));
}

std::shared_ptr<StreamImpl> CpuDevice::create_stream() {
  return std::make_shared<CpuStream>(shared_from_this(), pool_);
}

std::shared_ptr<EventImpl> CpuDevice::create_event() {
  return std::make_shared<CpuEvent>(shared_from_this());
}

}  // namespace hal::cpu
