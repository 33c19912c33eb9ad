// OpenClStream::launch: binding hal's kernel arguments to a cl_kernel and enqueuing it.
#include "backends/opencl/opencl_buffer.hpp"
#include "backends/opencl/opencl_kernel.hpp"
#include "backends/opencl/opencl_stream.hpp"
#include "core/default_work_group.hpp"
#include "core/format_sizes.hpp"

namespace hal::opencl {
namespace {

// Sub-buffers made for arguments that start inside a cl_mem; released once the launch is
// enqueued (the driver keeps them for the command).
class SubBuffers {
 public:
  explicit SubBuffers(const ClApi& api) : api_(api) {}
  ~SubBuffers() {
    for (cl_mem mem : mems_) api_.clReleaseMemObject(mem);
  }
  void add(cl_mem mem) { mems_.push_back(mem); }

 private:
  const ClApi& api_;
  std::vector<cl_mem> mems_;
};

}  // namespace

void OpenClStream::launch(const std::shared_ptr<KernelImpl>& kernel_impl,
                          const LaunchConfig& config, std::span<const KernelArg> args) {
  auto& kernel = static_cast<OpenClKernel&>(*kernel_impl);
  const auto what = [&] { return where("launch of '" + kernel.name() + "'"); };
  if (args.size() != kernel.num_args())
    throw Error(ErrorCode::InvalidArgument, what() + ": the kernel takes " +
                                                std::to_string(kernel.num_args()) + " arguments, " +
                                                std::to_string(args.size()) + " given");
  // OpenCL sizes work-group memory per argument (KernelArg::local_memory for a __local pointer);
  // an enqueue has no dynamic amount of its own, so shared_bytes would be dropped unseen.
  if (config.shared_bytes != 0)
    throw Error(ErrorCode::Unsupported,
                what() + ": LaunchConfig::shared_bytes (" + std::to_string(config.shared_bytes) +
                    " bytes) is CUDA's dynamic shared memory; OpenCL kernels take a __local "
                    "argument sized by KernelArg::local_memory, or declare SHARED arrays");

  // Geometry: whole work groups, so `global` rounds up to a multiple of `local`. A portable
  // kernel launched without a local size gets hal's default shape (see default_work_group.hpp);
  // an OpenCL C kernel's global size stays exact, grouped as the driver chooses.
  const cl_uint dims = config.global[2] > 1 ? 3 : config.global[1] > 1 ? 2 : 1;
  const bool picks_local = config.local == std::array<uint32_t, 3>{0, 0, 0};
  const bool has_local = !picks_local || kernel.runs_past_global();
  std::array<uint32_t, 3> chosen = config.local;
  size_t global[3] = {config.global[0], config.global[1], config.global[2]};
  size_t local[3] = {1, 1, 1};
  if (has_local) {
    if (picks_local)
      chosen = detail::default_work_group(static_cast<int>(dims), kernel.max_group_items());
    uint64_t items = 1;
    for (cl_uint d = 0; d < 3; ++d) {
      local[d] = chosen[d] == 0 ? 1 : chosen[d];
      if (d >= dims && local[d] != 1)
        throw Error(ErrorCode::InvalidArgument,
                    what() + ": local size " + detail::format_sizes(config.local) +
                        " spans dimension " + std::to_string(d) + " of a " + std::to_string(dims) +
                        "-d global size " + detail::format_sizes(config.global));
      items *= local[d];
      global[d] = (global[d] + local[d] - 1) / local[d] * local[d];
    }
    const uint32_t max_items = device_->info().limits.max_work_group_size;
    if (items > max_items)
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": local size " + detail::format_sizes(config.local) + " has " +
                      std::to_string(items) + " work items; " + device_->info().id +
                      " allows at most " + std::to_string(max_items));
  }

  SubBuffers sub_buffers(api_);
  const size_t align = device_->traits().base_address_align_bytes;
  std::lock_guard kernel_lock(kernel.launch_mutex());
  for (cl_uint i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    const auto which = [&] { return what() + ": argument " + std::to_string(i); };
    cl_int status = CL_SUCCESS;
    switch (arg.kind()) {
      case KernelArg::Kind::buffer: {
        const BufferPtr& buffer = arg.buffer().impl();
        const ClRegion region = region_of(*buffer, arg.offset());
        cl_mem mem = region.mem;
        if (region.offset != 0) {
          const size_t bytes = buffer->size() - arg.offset();
          if (region.offset % align != 0 || bytes == 0)
            throw Error(ErrorCode::InvalidArgument,
                        which() + ": a view at byte " + std::to_string(arg.offset()) + " of a " +
                            std::to_string(buffer->size()) + "-byte buffer; " + device_->info().id +
                            " needs views that start at a multiple of " + std::to_string(align) +
                            " bytes and are not empty");
          const cl_buffer_region view{region.offset, bytes};
          mem = api_.clCreateSubBuffer(region.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                       &view, &status);
          if (status != CL_SUCCESS) throw_status(status, which(), "clCreateSubBuffer");
          sub_buffers.add(mem);
        }
        status = api_.clSetKernelArg(kernel.native(), i, sizeof mem, &mem);
        if (status != CL_SUCCESS) throw_status(status, which() + " (a buffer)", "clSetKernelArg");
        break;
      }
      case KernelArg::Kind::scalar:
        status = api_.clSetKernelArg(kernel.native(), i, arg.scalar_size(), arg.scalar_data());
        if (status != CL_SUCCESS)
          throw_status(status,
                       which() + " (a " + std::to_string(arg.scalar_size()) + "-byte scalar)",
                       "clSetKernelArg");
        break;
      case KernelArg::Kind::local_memory:
        status = api_.clSetKernelArg(kernel.native(), i, arg.offset(), nullptr);
        if (status != CL_SUCCESS)
          throw_status(status,
                       which() + " (" + std::to_string(arg.offset()) + " bytes of local memory)",
                       "clSetKernelArg");
        break;
    }
  }
  const auto each_buffer = [&](auto&& keep) {
    for (const KernelArg& arg : args)
      if (arg.kind() == KernelArg::Kind::buffer) keep(arg.buffer().impl());
  };
  // The trace shows the work-group size the launch ran with, hal's own where it chose one.
  LaunchConfig ran = config;
  ran.local = chosen;
  submit_holding(each_buffer, [&] {
    DeviceSpan span(*this, device_spans_, "kernel", kernel.name(), trace::detail::launch_args(ran));
    cl_int status =
        api_.clEnqueueNDRangeKernel(queue_, kernel.native(), dims, nullptr, global,
                                    has_local ? local : nullptr, 0, nullptr, span.event());
    if (status != CL_SUCCESS)
      throw_status(
          status, what(),
          "clEnqueueNDRangeKernel with global " + detail::format_sizes(global) + " and local " +
              (has_local ? detail::format_sizes(local) : std::string("chosen by the driver")));
    span.enqueued(api_);
  });
}

}  // namespace hal::opencl
