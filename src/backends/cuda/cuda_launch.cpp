// CudaStream::launch: hal's launch geometry and arguments onto cuLaunchKernel.
#include <array>

#include "backends/cuda/cuda_buffer.hpp"
#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/cuda_stream.hpp"
#include "core/default_work_group.hpp"
#include "core/format_sizes.hpp"

namespace hal::cuda {
namespace {

// Argument storage on the stack for the common case.
constexpr size_t kInlineArgs = 16;

}  // namespace

void CudaStream::launch(const std::shared_ptr<KernelImpl>& kernel_impl, const LaunchConfig& config,
                        std::span<const KernelArg> args) {
  auto& kernel = static_cast<CudaKernel&>(*kernel_impl);
  const auto what = [&] { return where("launch of '" + kernel.name() + "'"); };
  const DeviceInfo& info = device_->info();
  const CuDeviceTraits& traits = device_->traits();

  // Geometry: blocks of `local` threads (a default shape when none is given, within the kernel's
  // own limit), and enough of them to cover `global`; the last block in each dimension may run
  // past it.
  const int dims = config.global[2] > 1 ? 3 : config.global[1] > 1 ? 2 : 1;
  const bool has_local = config.local[0] != 0 || config.local[1] != 0 || config.local[2] != 0;
  std::array<uint32_t, 3> block = detail::default_work_group(dims, kernel.max_threads());
  if (has_local)
    for (int d = 0; d < 3; ++d) block[d] = config.local[d] == 0 ? 1 : config.local[d];
  const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
  if (threads > info.limits.max_work_group_size)
    throw Error(ErrorCode::InvalidArgument,
                what() + ": local size " + detail::format_sizes(block) + " has " +
                    std::to_string(threads) + " threads; " + info.id + " allows at most " +
                    std::to_string(info.limits.max_work_group_size) + " per block");
  if (threads > kernel.max_threads())
    throw Error(ErrorCode::InvalidArgument,
                what() + ": local size " + detail::format_sizes(block) + " has " +
                    std::to_string(threads) + " threads; the kernel allows at most " +
                    std::to_string(kernel.max_threads()) + " per block on " + info.id +
                    " (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, set "
                    "by its registers a thread or __launch_bounds__)");
  std::array<uint32_t, 3> grid{};
  for (int d = 0; d < 3; ++d) {
    if (block[d] > info.limits.max_work_group_dims[d])
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": local size " + detail::format_sizes(block) + " exceeds " +
                      detail::format_sizes(info.limits.max_work_group_dims) + ", the block of " +
                      info.id);
    const uint64_t blocks = (config.global[d] + block[d] - 1) / block[d];
    if (blocks > traits.max_grid[d])
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": global size " + detail::format_sizes(config.global) + " needs " +
                      std::to_string(blocks) + " blocks in dimension " + std::to_string(d) + "; " +
                      info.id + " allows at most " + std::to_string(traits.max_grid[d]));
    grid[d] = static_cast<uint32_t>(blocks);
  }
  if (config.shared_bytes > info.limits.max_shared_memory_bytes)
    throw Error(ErrorCode::InvalidArgument,
                what() + ": " + std::to_string(config.shared_bytes) +
                    " bytes of dynamic shared memory; " + info.id + " allows at most " +
                    std::to_string(info.limits.max_shared_memory_bytes) + " per block");
  if (const CUresult result = kernel.allow_shared_bytes(config.shared_bytes);
      result != CUDA_SUCCESS)
    fail(result, "launch of '" + kernel.name() + "'",
         "cuFuncSetAttribute (dynamic shared memory of " + std::to_string(config.shared_bytes) +
             " bytes)");

  // Arguments: the driver copies the values behind `params` during cuLaunchKernel.
  std::array<CUdeviceptr, kInlineArgs> inline_addresses;
  std::array<void*, kInlineArgs> inline_params;
  std::vector<CUdeviceptr> heap_addresses;
  std::vector<void*> heap_params;
  CUdeviceptr* addresses = inline_addresses.data();
  void** params = inline_params.data();
  if (args.size() > kInlineArgs) {
    heap_addresses.resize(args.size());
    heap_params.resize(args.size());
    addresses = heap_addresses.data();
    params = heap_params.data();
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    switch (arg.kind()) {
      case KernelArg::Kind::buffer:
        addresses[i] = address_of(*arg.buffer().impl(), arg.offset());
        params[i] = &addresses[i];
        break;
      case KernelArg::Kind::scalar:
        params[i] = const_cast<void*>(arg.scalar_data());
        break;
      case KernelArg::Kind::local_memory:
        throw Error(ErrorCode::InvalidArgument,
                    what() + ": argument " + std::to_string(i) +
                        " is local memory, which CUDA kernels cannot take as an argument; declare "
                        "a SHARED array in the kernel, or pass LaunchConfig::shared_bytes");
    }
  }
  submit_holding(
      [&](auto&& keep) {
        for (const KernelArg& arg : args)
          if (arg.kind() == KernelArg::Kind::buffer) keep(arg.buffer().impl());
        keep(kernel_impl);
      },
      [&] {
        return api_.cuLaunchKernel(kernel.native(), grid[0], grid[1], grid[2], block[0], block[1],
                                   block[2], config.shared_bytes, stream_, params, nullptr);
      },
      [&](CUresult result) {
        fail(result, "launch of '" + kernel.name() + "'",
             "cuLaunchKernel with grid " + detail::format_sizes(grid) + " and block " +
                 detail::format_sizes(block));
      },
      trace::enabled() ? CommandSpan{"kernel", kernel.name(),
                                     trace::detail::launch_args(
                                         LaunchConfig{config.global, block, config.shared_bytes})}
                       : CommandSpan{});
}

}  // namespace hal::cuda
