#include "plugin_stream.hpp"

#include <cstring>

namespace hal::plugin {
namespace {

// A host callback in flight: hal's function, and where its exception goes.
struct Callback {
  std::function<void()> fn;
  std::shared_ptr<std::exception_ptr> failure;
  std::shared_ptr<std::mutex> failure_mutex;
};

// Called by the plugin; no exception may cross back into it.
void run_callback(void* data) {
  std::unique_ptr<Callback> callback(static_cast<Callback*>(data));
  try {
    callback->fn();
  } catch (...) {
    std::lock_guard lock(*callback->failure_mutex);
    if (!*callback->failure) *callback->failure = std::current_exception();
  }
}

hal_plugin_tensor tensor_of(const OpOperand& operand) {
  hal_plugin_tensor out{};
  const NativeRange range = native(operand.buffer, 0);
  out.buffer = range.buffer;
  // The block's byte offset in its segment, in elements of the operand's dtype: blocks are
  // aligned to 512 bytes, a multiple of every element size.
  out.offset = range.offset / size_of(operand.dtype) + operand.offset;
  out.dtype = static_cast<hal_plugin_dtype>(operand.dtype);
  out.rank = static_cast<uint32_t>(operand.shape.size());
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    out.shape[d] = operand.shape[d];
    out.strides[d] = operand.strides[d];
  }
  return out;
}

}  // namespace

PluginStream::PluginStream(std::shared_ptr<PluginDevice> device, hal_plugin_stream handle)
    : device_(std::move(device)),
      handle_(handle),
      failure_(std::make_shared<std::exception_ptr>()) {}

PluginStream::~PluginStream() {
  std::lock_guard lock(mutex_);
  api().stream_synchronize(handle_);  // a lost device fails here too; nothing is left to wait for
  api().stream_destroy(handle_);
}

void PluginStream::enqueued(hal_status status, const std::string& what,
                            std::vector<BufferPtr> buffers) {
  device_->check(status, what);
  held_.insert(held_.end(), std::make_move_iterator(buffers.begin()),
               std::make_move_iterator(buffers.end()));
  if (held_.size() > 1024) {  // let go of what completed work held, now and then
    int32_t idle = 0;
    if (api().stream_query(handle_, &idle) == HAL_STATUS_OK && idle) {
      held_.clear();
      held_kernels_.clear();
    }
  }
}

void PluginStream::copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                                  size_t bytes) {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  const NativeRange to = native(dst, dst_offset);
  enqueued(api().copy_to_device(handle_, to.buffer, to.offset, src, bytes),
           "copy " + std::to_string(bytes) + " bytes to the device", {dst});
}

void PluginStream::copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  const NativeRange from = native(src, src_offset);
  enqueued(api().copy_to_host(handle_, dst, from.buffer, from.offset, bytes),
           "copy " + std::to_string(bytes) + " bytes to the host", {src});
}

bool PluginStream::copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src,
                        size_t src_offset, size_t bytes) {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  const NativeRange to = native(dst, dst_offset), from = native(src, src_offset);
  enqueued(api().copy_on_device(handle_, to.buffer, to.offset, from.buffer, from.offset, bytes),
           "copy " + std::to_string(bytes) + " bytes on the device", {dst, src});
  return true;
}

void PluginStream::fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
                        size_t pattern_size) {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  const NativeRange to = native(dst, dst_offset);
  if (pattern_size == 1 || pattern_size == 2 || pattern_size == 4 || pattern_size == 8) {
    enqueued(api().fill(handle_, to.buffer, to.offset, bytes, pattern,
                        static_cast<uint32_t>(pattern_size)),
             "fill " + std::to_string(bytes) + " bytes", {dst});
    return;
  }
  // Other pattern sizes: the pattern written out on the host, then copied.
  auto staged = std::make_shared<std::vector<unsigned char>>(bytes);
  for (size_t at = 0; at < bytes; at += pattern_size)
    std::memcpy(staged->data() + at, pattern, std::min(pattern_size, bytes - at));
  enqueued(api().copy_to_device(handle_, to.buffer, to.offset, staged->data(), bytes),
           "fill " + std::to_string(bytes) + " bytes", {dst});
  auto* keep = new Callback{[staged] {}, failure_, failure_mutex_};
  const hal_status status = api().host_callback(handle_, run_callback, keep);
  if (status != HAL_STATUS_OK) delete keep;
  device_->check(status, "fill");
}

void PluginStream::host_callback(std::function<void()> fn) {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  auto callback = std::make_unique<Callback>(Callback{std::move(fn), failure_, failure_mutex_});
  const hal_status status = api().host_callback(handle_, run_callback, callback.get());
  if (status == HAL_STATUS_OK) callback.release();  // the plugin owns it until it runs
  device_->check(status, "enqueue a host callback");
}

void PluginStream::launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
                          std::span<const KernelArg> args) {
  const auto* compiled = dynamic_cast<const PluginKernel*>(kernel.get());
  if (!compiled) throw_unsupported(*device_, "launching kernel '" + kernel->name() + "'");
  device_->check_not_lost();
  std::vector<hal_plugin_kernel_arg> native_args(args.size());
  std::vector<BufferPtr> held;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    hal_plugin_kernel_arg& out = native_args[i];
    switch (arg.kind()) {
      case KernelArg::Kind::buffer: {
        const NativeRange range = native(arg.buffer().impl(), arg.offset());
        out.kind = HAL_PLUGIN_ARG_BUFFER;
        out.buffer = range.buffer;
        out.offset = range.offset;
        held.push_back(arg.buffer().impl());
        break;
      }
      case KernelArg::Kind::scalar:
        out.kind = HAL_PLUGIN_ARG_SCALAR;
        out.size = static_cast<uint32_t>(arg.scalar_size());
        std::memcpy(out.value, arg.scalar_data(), arg.scalar_size());
        break;
      case KernelArg::Kind::local_memory:
        throw_unsupported(*device_, "local memory arguments (kernel '" + kernel->name() +
                                        "'): declare SHARED arrays in the kernel");
    }
  }
  const uint64_t global[3] = {config.global[0], config.global[1], config.global[2]};
  const uint32_t local[3] = {config.local[0], config.local[1], config.local[2]};
  std::lock_guard lock(mutex_);
  const hal_status status = HAL_PLUGIN_FN(device_->library(), kernel_launch)(
      handle_, compiled->handle(), global, local, native_args.data(),
      static_cast<uint32_t>(native_args.size()));
  enqueued(status, "launch of kernel '" + kernel->name() + "'", std::move(held));
  held_kernels_.push_back(kernel);
}

void PluginStream::gemm(const GemmDesc& g) {
  const auto op_matmul = HAL_PLUGIN_FN(device_->library(), op_matmul);
  if (!op_matmul || !device_->info().has_feature(feature::kBuiltinMatmul))
    throw_unsupported(*device_, "matrix products (the plugin offers no matmul)");
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  const size_t element = size_of(g.dtype);
  const NativeRange a = native(g.a.buffer, 0), b = native(g.b.buffer, 0), c = native(g.c.buffer, 0);
  hal_plugin_gemm desc{};
  desc.struct_size = sizeof desc;
  desc.dtype = static_cast<hal_plugin_dtype>(g.dtype);
  desc.m = g.m;
  desc.n = g.n;
  desc.k = g.k;
  desc.batch = g.batch;
  desc.a = a.buffer;
  desc.b = b.buffer;
  desc.c = c.buffer;
  desc.a_offset = a.offset / element + g.a.offset;
  desc.b_offset = b.offset / element + g.b.offset;
  desc.c_offset = c.offset / element + g.c.offset;
  desc.lda = g.a.ld;
  desc.ldb = g.b.ld;
  desc.ldc = g.c.ld;
  desc.a_batch_stride = g.a.batch_stride;
  desc.b_batch_stride = g.b.batch_stride;
  desc.c_batch_stride = g.c.batch_stride;
  desc.a_transposed = g.a.transposed;
  desc.b_transposed = g.b.transposed;
  enqueued(op_matmul(handle_, &desc), "matmul", {g.a.buffer, g.b.buffer, g.c.buffer});
}

void PluginStream::run_builtin_op(const BuiltinOp& op) {
  const PluginLibrary& library = device_->library();
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  const hal_plugin_tensor out = tensor_of(op.out);
  std::vector<hal_plugin_tensor> inputs;
  std::vector<BufferPtr> held{op.out.buffer};
  for (const OpOperand& input : op.inputs) {
    inputs.push_back(tensor_of(input));
    held.push_back(input.buffer);
  }
  hal_status status = HAL_STATUS_UNSUPPORTED;
  const auto op_binary = HAL_PLUGIN_FN(library, op_binary);
  const auto op_unary = HAL_PLUGIN_FN(library, op_unary);
  const auto op_reduce = HAL_PLUGIN_FN(library, op_reduce);
  switch (op.kind) {
    case BuiltinOpKind::binary:
      if (!op_binary) throw_unsupported(*device_, "binary ops");
      status = op_binary(handle_, op.op, &out, &inputs[0], &inputs[1]);
      break;
    case BuiltinOpKind::unary:
      if (!op_unary) throw_unsupported(*device_, "unary ops");
      status = op_unary(handle_, op.op, &out, &inputs[0]);
      break;
    case BuiltinOpKind::reduce:
      if (!op_reduce) throw_unsupported(*device_, "reductions");
      status = op_reduce(handle_, op.op, &out, &inputs[0], op.reduced_axes);
      break;
  }
  enqueued(status, "op " + std::to_string(op.op), std::move(held));
}

void PluginStream::record(EventImpl& event) {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  auto& plugin_event = static_cast<PluginEvent&>(event);
  device_->check(api().event_record(plugin_event.handle(), handle_), "record an event");
  plugin_event.mark_recorded();
}

void PluginStream::wait(EventImpl& event) {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  device_->check(api().stream_wait_event(handle_, static_cast<PluginEvent&>(event).handle()),
                 "wait for an event");
}

void PluginStream::check_failure() {
  std::exception_ptr failure;
  {
    std::lock_guard lock(*failure_mutex_);
    std::swap(failure, *failure_);
  }
  if (failure) throw_async_failure(*device_, failure);
}

void PluginStream::synchronize() {
  device_->check_not_lost();
  {
    std::lock_guard lock(mutex_);
    device_->check(api().stream_synchronize(handle_), "synchronize a stream");
    held_.clear();
    held_kernels_.clear();
  }
  check_failure();
}

bool PluginStream::query() {
  device_->check_not_lost();
  std::lock_guard lock(mutex_);
  int32_t idle = 0;
  device_->check(api().stream_query(handle_, &idle), "query a stream");
  if (idle) {
    held_.clear();
    held_kernels_.clear();
  }
  return idle != 0;
}

}  // namespace hal::plugin
