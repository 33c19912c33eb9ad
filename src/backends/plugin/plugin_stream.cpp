#include "backends/plugin/plugin_stream.hpp"

#include <cstring>
#include <limits>

#include "backends/plugin/plugin_abi_1_1.hpp"
#include "backends/plugin/plugin_enums.hpp"
#include "core/callback_thread.hpp"

namespace hal::plugin {
namespace {

// A host callback in flight: hal's function, its stream, where its exception goes, and whether
// it runs on a device lost before it began.
struct Callback {
  std::function<void()> fn;
  const StreamImpl* stream;
  std::shared_ptr<std::exception_ptr> failure;
  std::shared_ptr<std::mutex> failure_mutex;
  bool even_if_lost;
  std::shared_ptr<detail::StreamFailures> failures;  // for the records after it
  uint64_t position;                                 // among the stream's host callbacks
};

// Called by the plugin; no exception may cross back into it.
void run_callback(void* data) {
  std::unique_ptr<Callback> callback(static_cast<Callback*>(data));
  try {
    callback->fn();
  } catch (...) {
    // Kept before the plugin goes on to the work after the callback.
    callback->failures->failed(callback->position, std::current_exception());
    std::lock_guard lock(*callback->failure_mutex);
    if (!*callback->failure) *callback->failure = std::current_exception();
  }
}

// host_callback_status's (1.3): a callback that begins after its device was lost does not run
// (its host memory may be gone: a copy into memory the caller freed on hearing of the loss),
// unless it is one of hal's that finds the loss itself (host_callback_even_if_lost). What it
// holds is dropped on the plugin's thread, as after a run, so that a deleter among it that
// synchronizes the stream does not wait for that thread.
void run_told_callback(void* data, hal_status status) {
  std::unique_ptr<Callback> callback(static_cast<Callback*>(data));
  if (status == HAL_STATUS_OK || callback->even_if_lost) return run_callback(callback.release());
  const detail::ReleasingCallback releasing(callback->stream);
  callback.reset();
}

hal_plugin_tensor tensor_of(const OpOperand& operand) {
  hal_plugin_tensor out{};
  out.struct_size = sizeof out;
  const NativeRange range = native(operand.buffer, 0);
  out.buffer = range.buffer;
  // The block's byte offset in its segment, in elements of the operand's dtype: blocks are
  // aligned to 512 bytes, a multiple of every element size.
  out.offset = range.offset / size_of(operand.dtype) + operand.offset;
  out.dtype = to_plugin(operand.dtype);
  out.rank = static_cast<uint32_t>(operand.shape.size());
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    out.shape[d] = operand.shape[d];
    out.strides[d] = operand.strides[d];
  }
  return out;
}

// Structs in the layout the plugin reads: its own header's, which before 1.2 lacked
// struct_size. The pointers stay valid while this lives.
template <class Current, class Legacy>
class PluginLayout {
 public:
  PluginLayout(bool sized, std::vector<Current> items) : sized_(sized), items_(std::move(items)) {
    if (!sized_)
      for (const Current& item : items_) legacy_.push_back(abi_1_1::to_1_1(item));
  }
  // The plugin never sees hal's type, only the bytes: a pointer of the type its table names.
  const Current* at(size_t i) const {
    return sized_ ? &items_[i] : reinterpret_cast<const Current*>(&legacy_[i]);
  }
  const Current* data() const { return items_.empty() ? nullptr : at(0); }

 private:
  bool sized_;
  std::vector<Current> items_;
  std::vector<Legacy> legacy_;
};

// The op's number in plugin.h, for the kind of op it is.
std::optional<hal_plugin_op> plugin_op_of(const BuiltinOp& op) {
  switch (op.kind) {
    case BuiltinOpKind::binary:
      return plugin_op(static_cast<ops::Binary>(op.op));
    case BuiltinOpKind::unary:
      return plugin_op(static_cast<ops::Unary>(op.op));
    case BuiltinOpKind::reduce:
      return plugin_op(static_cast<ops::Reduce>(op.op));
  }
  return std::nullopt;
}

// The op's name ("add", "neg", "sum") for messages; `op` is one plugin_op_of maps.
std::string_view name_of(const BuiltinOp& op) {
  switch (op.kind) {
    case BuiltinOpKind::binary:
      return ops::name(static_cast<ops::Binary>(op.op));
    case BuiltinOpKind::unary:
      return ops::name(static_cast<ops::Unary>(op.op));
    case BuiltinOpKind::reduce:
      return ops::name(static_cast<ops::Reduce>(op.op));
  }
  return "a built-in op";
}

}  // namespace

PluginStream::PluginStream(std::shared_ptr<PluginDevice> device, hal_plugin_stream handle)
    : device_(std::move(device)),
      handle_(handle),
      refs_(PluginFences{device_->library().api}, 1),
      failure_(std::make_shared<std::exception_ptr>()) {}

PluginStream::~PluginStream() {
  std::lock_guard lock(mutex_);
  // A lost device fails here too, once none of the stream's work runs any more (plugin.h).
  api().stream_synchronize(handle_);
  release_all();
  api().stream_destroy(handle_);
}

std::unique_lock<std::mutex> PluginStream::lock_for(const char* what) {
  // plugin.h: a callback may call the API, but not for its own stream. Taking the lock here
  // could also wait for ever: a synchronize holds it while the plugin waits for this callback.
  if (detail::RunningCallback::of(this))
    throw Error(ErrorCode::InvalidState,
                std::string(what) + " on a stream of " + device_->info().id +
                    " from that stream's own host callback: a plugin's stream takes no calls "
                    "from its callbacks (use another stream)");
  return std::unique_lock(mutex_);
}

void PluginStream::check(hal_status status, const std::string& what) {
  if (status == HAL_STATUS_DEVICE_LOST) release_all();
  device_->check(status, what);
}

void PluginStream::check_not_lost() {
  if (device_->is_lost()) release_all();
  device_->check_not_lost();
}

void PluginStream::enqueued(hal_status status, const std::string& what, std::vector<Ref> refs) {
  check(status, what);
  // A command that holds nothing needs no fence: query() asks the plugin whether it is idle.
  if (refs.empty() || !refs_.add(refs)) return;
  // The command is enqueued, whatever the fence does: one the plugin cannot make (out of
  // events) leaves the batch open, what it holds kept until a later fence or synchronize. An
  // error here would say the command failed, and its caller would free or retry what it runs
  // on. Only a lost device is said at once.
  const hal_status fenced = fence_open_batch();
  if (fenced == HAL_STATUS_DEVICE_LOST) check(fenced, what + " (its fence)");
}

hal_status PluginStream::fence_open_batch() {
  hal_plugin_event event = nullptr;
  hal_status status = api().event_create(device_->handle(), &event);
  if (status == HAL_STATUS_OK) status = api().event_record(event, handle_);
  if (status != HAL_STATUS_OK) {
    if (event) api().event_destroy(event);
    return status;
  }
  refs_.close(event);
  Batches done;
  refs_.take_completed(done);
  refs_.take_failure();  // a failed fence is a lost device, which the next call reports
  refs_.release(done);
  return HAL_STATUS_OK;
}

void PluginStream::release_all() {
  Batches batches;
  std::vector<Ref> open;
  refs_.take_all(batches, open);
  refs_.take_failure();
  refs_.release(batches);
}

void PluginStream::copy_from_host(const BufferPtr& dst, size_t dst_offset, const void* src,
                                  size_t bytes) {
  const std::unique_lock lock = lock_for("copy to the device");
  check_not_lost();
  const NativeRange to = native(dst, dst_offset);
  enqueued(api().copy_to_device(handle_, to.buffer, to.offset, src, bytes),
           "copy " + std::to_string(bytes) + " bytes to the device", {dst});
}

void PluginStream::copy_to_host(void* dst, const BufferPtr& src, size_t src_offset, size_t bytes) {
  const std::unique_lock lock = lock_for("copy to the host");
  check_not_lost();
  const NativeRange from = native(src, src_offset);
  enqueued(api().copy_to_host(handle_, dst, from.buffer, from.offset, bytes),
           "copy " + std::to_string(bytes) + " bytes to the host", {src});
}

bool PluginStream::copy(const BufferPtr& dst, size_t dst_offset, const BufferPtr& src,
                        size_t src_offset, size_t bytes) {
  const std::unique_lock lock = lock_for("copy");
  check_not_lost();
  const NativeRange to = native(dst, dst_offset), from = native(src, src_offset);
  const std::string what = "copy " + std::to_string(bytes) + " bytes";
  const bool here = &dst->device() == device_.get() && &src->device() == device_.get();
  // Before 1.2, copy_on_device took buffers of two devices; since, copy_peer does.
  if (here || device_->library().api->abi_minor < 2) {
    enqueued(api().copy_on_device(handle_, to.buffer, to.offset, from.buffer, from.offset, bytes),
             what + " on the device", {dst, src});
    return true;
  }
  const auto copy_peer = HAL_PLUGIN_FN(device_->library(), copy_peer);
  if (!copy_peer || (&dst->device() != device_.get() && &src->device() != device_.get()))
    return false;  // hal stages through host memory
  const hal_status status =
      copy_peer(handle_, to.buffer, to.offset, from.buffer, from.offset, bytes);
  if (status == HAL_STATUS_UNSUPPORTED) return false;  // these two devices cannot reach each other
  if (status == HAL_STATUS_DEVICE_LOST) {
    // The far device may be the one lost: unless this one says it is lost itself (any other
    // answer, a failure included, says it is not), the loss is the far one's, and this device
    // stays usable.
    auto& far = static_cast<const PluginDevice&>(&dst->device() == device_.get() ? src->device()
                                                                                 : dst->device());
    uint64_t free_bytes = 0;
    if (api().device_memory_free(device_->handle(), &free_bytes) != HAL_STATUS_DEVICE_LOST)
      far.check(status,
                what + " from " + src->device().info().id + " to " + dst->device().info().id);
  }
  enqueued(status, what + " from " + src->device().info().id + " to " + dst->device().info().id,
           {dst, src});
  return true;
}

void PluginStream::fill(const BufferPtr& dst, size_t dst_offset, size_t bytes, const void* pattern,
                        size_t pattern_size) {
  const std::unique_lock lock = lock_for("fill");
  check_not_lost();
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
           "fill " + std::to_string(bytes) + " bytes", {dst, staged});
}

void PluginStream::host_callback(std::function<void()> fn) {
  enqueue_callback(std::move(fn), false);
}

void PluginStream::host_callback_even_if_lost(std::function<void()> fn) {
  enqueue_callback(std::move(fn), true);
}

void PluginStream::enqueue_callback(std::function<void()> fn, bool even_if_lost) {
  const std::unique_lock lock = lock_for("enqueue a host callback");
  check_not_lost();
  auto callback =
      std::make_unique<Callback>(Callback{std::move(fn), this, failure_, failure_mutex_,
                                          even_if_lost, failures_, ++callbacks_enqueued_});
  const auto told = HAL_PLUGIN_FN(device_->library(), host_callback_status);
  const hal_status status = told ? told(handle_, run_told_callback, callback.get())
                                 : api().host_callback(handle_, run_callback, callback.get());
  if (status == HAL_STATUS_OK) callback.release();  // the plugin owns it until it runs
  check(status, "enqueue a host callback");
}

void PluginStream::launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig& config,
                          std::span<const KernelArg> args) {
  const auto* compiled = dynamic_cast<const PluginKernel*>(kernel.get());
  if (!compiled) throw_unsupported(*device_, "launching kernel '" + kernel->name() + "'");
  std::vector<hal_plugin_kernel_arg> native_args(args.size());
  std::vector<Ref> holds{kernel};
  uint64_t local_bytes = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    hal_plugin_kernel_arg& out = native_args[i];
    out.struct_size = sizeof out;
    switch (arg.kind()) {
      case KernelArg::Kind::buffer: {
        const NativeRange range = native(arg.buffer().impl(), arg.offset());
        out.kind = HAL_PLUGIN_ARG_BUFFER;
        out.buffer = range.buffer;
        out.offset = range.offset;
        holds.push_back(arg.buffer().impl());
        break;
      }
      case KernelArg::Kind::scalar:
        out.kind = HAL_PLUGIN_ARG_SCALAR;
        out.size = static_cast<uint32_t>(arg.scalar_size());
        std::memcpy(out.value, arg.scalar_data(), arg.scalar_size());
        break;
      case KernelArg::Kind::local_memory:
        if (device_->local_memory_bytes() == 0)
          throw_unsupported(*device_, "local memory arguments (kernel '" + kernel->name() +
                                          "'): declare SHARED arrays in the kernel");
        local_bytes += arg.offset();
        if (local_bytes > device_->local_memory_bytes() ||
            arg.offset() > std::numeric_limits<uint32_t>::max())
          throw Error(ErrorCode::InvalidArgument,
                      "launch of kernel '" + kernel->name() + "' on " + device_->info().id +
                          ": its local memory arguments ask for " + std::to_string(local_bytes) +
                          " bytes; the device gives a launch " +
                          std::to_string(device_->local_memory_bytes()));
        out.kind = HAL_PLUGIN_ARG_LOCAL_MEMORY;
        out.size = static_cast<uint32_t>(arg.offset());
        break;
    }
  }
  const PluginLayout<hal_plugin_kernel_arg, abi_1_1::KernelArg> laid_out(device_->sized_structs(),
                                                                         std::move(native_args));
  const uint64_t global[3] = {config.global[0], config.global[1], config.global[2]};
  const uint32_t local[3] = {config.local[0], config.local[1], config.local[2]};
  const std::unique_lock lock = lock_for("launch a kernel");
  check_not_lost();
  const hal_status status = HAL_PLUGIN_FN(device_->library(), kernel_launch)(
      handle_, compiled->handle(), global, local, laid_out.data(),
      static_cast<uint32_t>(args.size()));
  enqueued(status, "launch of kernel '" + kernel->name() + "'", std::move(holds));
}

void PluginStream::gemm(const GemmDesc& g) {
  const auto op_matmul = HAL_PLUGIN_FN(device_->library(), op_matmul);
  if (!op_matmul || !device_->info().has_feature(feature::kBuiltinMatmul))
    throw_unsupported(*device_, "matrix products (the plugin offers no matmul)");
  const std::unique_lock lock = lock_for("gemm");
  check_not_lost();
  const size_t element = size_of(g.dtype);
  const NativeRange a = native(g.a.buffer, 0), b = native(g.b.buffer, 0), c = native(g.c.buffer, 0);
  hal_plugin_gemm desc{};
  desc.struct_size = sizeof desc;
  desc.dtype = to_plugin(g.dtype);
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
  const std::optional<hal_plugin_op> number = plugin_op_of(op);
  if (!number)
    throw_unsupported(*device_, "built-in op " + std::to_string(op.op) + " (plugins lack it)");
  std::vector<hal_plugin_tensor> tensors{tensor_of(op.out)};
  std::vector<Ref> holds{op.out.buffer};
  for (const OpOperand& input : op.inputs) {
    tensors.push_back(tensor_of(input));
    holds.push_back(input.buffer);
  }
  const PluginLayout<hal_plugin_tensor, abi_1_1::Tensor> t(device_->sized_structs(),
                                                           std::move(tensors));
  const auto op_binary = HAL_PLUGIN_FN(library, op_binary);
  const auto op_unary = HAL_PLUGIN_FN(library, op_unary);
  const auto op_reduce = HAL_PLUGIN_FN(library, op_reduce);
  const std::unique_lock lock = lock_for("run an op");
  check_not_lost();
  hal_status status = HAL_STATUS_UNSUPPORTED;
  switch (op.kind) {
    case BuiltinOpKind::binary:
      if (!op_binary) throw_unsupported(*device_, "binary ops");
      status = op_binary(handle_, *number, t.at(0), t.at(1), t.at(2));
      break;
    case BuiltinOpKind::unary:
      if (!op_unary) throw_unsupported(*device_, "unary ops");
      status = op_unary(handle_, *number, t.at(0), t.at(1));
      break;
    case BuiltinOpKind::reduce:
      if (!op_reduce) throw_unsupported(*device_, "reductions");
      status = op_reduce(handle_, *number, t.at(0), t.at(1), op.reduced_axes);
      break;
  }
  enqueued(status, std::string(name_of(op)), std::move(holds));
}

void PluginStream::record(EventImpl& event) {
  const std::unique_lock lock = lock_for("record an event");
  check_not_lost();
  auto& plugin_event = static_cast<PluginEvent&>(event);
  check(api().event_record(plugin_event.handle(), handle_), "record an event");
  plugin_event.mark_recorded(serial(), failures_->mark(callbacks_enqueued_));
}

void PluginStream::wait(EventImpl& event) {
  const std::unique_lock lock = lock_for("wait for an event");
  check_not_lost();
  check(api().stream_wait_event(handle_, static_cast<PluginEvent&>(event).handle()),
        "wait for an event");
}

void PluginStream::check_failure() {
  std::exception_ptr failure;
  {
    std::lock_guard lock(*failure_mutex_);
    std::swap(failure, *failure_);
  }
  if (failure) {
    failures_->reported();
    throw_async_failure(*device_, failure);
  }
}

void PluginStream::synchronize() {
  {
    std::lock_guard lock(mutex_);
    // Asked even of a device known lost: it returns once nothing of the stream runs (plugin.h),
    // a host callback that began before the loss included, whose memory the caller may free
    // on hearing of the loss.
    const hal_status status = api().stream_synchronize(handle_);
    check_not_lost();
    check(status, "synchronize a stream");
    release_all();
  }
  check_failure();
}

bool PluginStream::query() {
  const std::unique_lock lock = lock_for("query the stream");
  check_not_lost();
  int32_t idle = 0;
  check(api().stream_query(handle_, &idle), "query a stream");
  if (idle) {
    release_all();
  } else {
    Batches done;
    refs_.take_completed(done);
    refs_.take_failure();
    refs_.release(done);
  }
  return idle != 0;
}

}  // namespace hal::plugin
