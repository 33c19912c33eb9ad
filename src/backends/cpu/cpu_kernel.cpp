// Running host kernels: small ranges inline on the stream's thread, large ones in chunks
// across the pool.
#include "backends/cpu/cpu_stream.hpp"

namespace hal::cpu {
namespace {

// Below this many work items a kernel is not worth waking other threads for.
constexpr uint64_t kParallelThreshold = 1 << 15;

}  // namespace

void run_host_kernel(ThreadPool& pool, const HostKernelImpl& kernel, const LaunchConfig& config,
                     std::span<const KernelArg> args) {
  const KernelArgs kernel_args(args);
  const Index3& global = config.global;
  if (config.total() < kParallelThreshold || pool.size() == 1) {
    kernel.fn()(KernelChunk{{0, 0, 0}, global, kernel_args});
    return;
  }
  // Split the slowest-varying dimension that has more than one item.
  size_t split = 2;
  while (split > 0 && global[split] == 1) --split;
  const uint64_t extent = global[split];
  const uint64_t grain = std::max<uint64_t>(1, config.local[split]);
  const uint64_t target_chunks = uint64_t{pool.size()} * 4;
  uint64_t chunk = std::max(grain, (extent + target_chunks - 1) / target_chunks);
  chunk = (chunk + grain - 1) / grain * grain;
  const uint64_t chunks = (extent + chunk - 1) / chunk;
  pool.parallel_for(chunks, [&](size_t index) {
    Index3 begin{0, 0, 0};
    Index3 end = global;
    begin[split] = index * chunk;
    end[split] = std::min(extent, begin[split] + chunk);
    kernel.fn()(KernelChunk{begin, end, kernel_args});
  });
}

}  // namespace hal::cpu
