// max_pool and avg_pool: the definitions (the window's arithmetic, ops/window.hpp), the CPU's
// host kernel, and elsewhere the same from strided views of the padded input.
#include "autograd/record.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/fallback.hpp"
#include "ops/nn_kernels.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"
#include "ops/window.hpp"

namespace hal {
namespace ops {

Window pool_window(bool max, const Tensor& x, const PoolOptions& o) {
  return window_of(max ? "max_pool" : "avg_pool", x, o.kernel, o.strides, o.dilations,
                   o.pads_before, o.pads_after, o.ceil_mode, /*strides_default_to_kernel=*/true);
}

namespace {

Tensor pool_of(bool max, const Tensor& x, const PoolOptions& options, Stream& s) {
  const std::string_view name = max ? "max_pool" : "avg_pool";
  check_defined(name, x);
  check_stream(name, x, s);
  if (x.dim() < 3 || x.dim() > 5)
    throw Error(ErrorCode::InvalidArgument, std::string(name) + " of " + x.describe() +
                                                ": expects x of [N, C, D1] to [N, C, D1, D2, D3]");
  const Window w = pool_window(max, x, options);
  static const OpDescriptor& max_op = descriptor("max_pool");
  static const OpDescriptor& avg_op = descriptor("avg_pool");
  const OpPlan plan = plan_or_throw(max ? max_op : avg_op, x.dtype(), {&x});
  if (plan.compute != x.dtype())
    return cast(pool_of(max, cast(x, plan.compute, s), options, s), x.dtype(), s);
  if (plan.implementation) {
    Shape shape{x.size(0), x.size(1)};
    shape.insert(shape.end(), w.out.begin(), w.out.end());
    Tensor out = empty_beside(x, shape, x.dtype());
    if (out.numel() > 0)
      std::get<PoolKernel>(plan.implementation->kernel)(max, x.contiguous(s), out, w,
                                                        options.count_include_pad, s);
    return out;
  }
  return max ? max_pool_from_views(x, w, s)
             : avg_pool_from_views(x, w, options.count_include_pad, s);
}

}  // namespace
}  // namespace ops

Tensor max_pool(const Tensor& x, const PoolOptions& options, Stream& stream) {
  if (autograd::recording({&x})) return autograd::record_pool(true, x, options, stream);
  return ops::run_op("max_pool", {x}, stream, [&options](const std::vector<Tensor>& in, Stream& s) {
    return ops::pool_of(true, in[0], options, s);
  });
}

Tensor avg_pool(const Tensor& x, const PoolOptions& options, Stream& stream) {
  if (autograd::recording({&x})) return autograd::record_pool(false, x, options, stream);
  return ops::run_op("avg_pool", {x}, stream, [&options](const std::vector<Tensor>& in, Stream& s) {
    return ops::pool_of(false, in[0], options, s);
  });
}

}  // namespace hal
