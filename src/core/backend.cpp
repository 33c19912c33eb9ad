// Default methods of the backend interfaces (backend.hpp).
#include "hal/backend.hpp"

#include <atomic>

#include "core/callback_thread.hpp"
#include "core/error_context.hpp"

namespace hal {

void throw_unsupported(const DeviceImpl& device, std::string_view what) {
  throw Error(ErrorCode::Unsupported, device.info().id + " does not support " + std::string(what));
}

void throw_async_failure(const DeviceImpl& device, std::exception_ptr failure) {
  const std::string where = "work enqueued on a stream of " + device.info().id;
  const detail::ErrorContext context(device.info().id, "synchronize");
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& error) {
    throw Error(ErrorCode::AsyncFailure, where + " failed: " + error.what());
  } catch (...) {
    throw Error(ErrorCode::AsyncFailure, where + " threw a non-standard exception");
  }
}

namespace {
uint64_t next_serial() {
  static std::atomic<uint64_t> serials{1};
  return serials.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

EventImpl::EventImpl() : serial_(next_serial()) {}
StreamImpl::StreamImpl() : serial_(next_serial()) {}

double EventImpl::elapsed_ms_since(const EventImpl&) const {
  throw_unsupported(device(), "event timing");
}

void StreamImpl::launch(const std::shared_ptr<KernelImpl>& kernel, const LaunchConfig&,
                        std::span<const KernelArg>) {
  throw_unsupported(device(), "launching kernel '" + kernel->name() + "'");
}

void StreamImpl::keep_until_done(std::shared_ptr<const void> value) {
  // Dropped as a callback's capture: a deleter of `value` may synchronize this stream.
  host_callback(detail::HeldCallback(this, [value = std::move(value)] {}));
}

void StreamImpl::begin_capture() {
  throw_unsupported(device(), "capturing streams into graphs (only CUDA devices have graphs)");
}

std::shared_ptr<GraphImpl> StreamImpl::end_capture() {
  throw_unsupported(device(), "capturing streams into graphs (only CUDA devices have graphs)");
}

void StreamImpl::launch_graph(const std::shared_ptr<GraphImpl>&) {
  throw_unsupported(device(), "replaying graphs");
}

void StreamImpl::gemm(const GemmDesc& gemm) {
  throw_unsupported(device(), "matrix products of " + std::string(to_string(gemm.dtype)) +
                                  " (the backend has no BLAS)");
}

bool StreamImpl::gemm_with_epilogue(const GemmDesc&, const GemmEpilogue&) { return false; }

void StreamImpl::convolution(const ConvDesc& conv) {
  throw_unsupported(device(), std::string(conv.transposed ? "transposed " : "") +
                                  "convolutions of " + std::string(to_string(conv.dtype)) +
                                  " (the backend has no DNN library)");
}

void StreamImpl::run_builtin_op(const BuiltinOp&) {
  throw_unsupported(device(), "built-in ops (it runs ops as kernels, or not at all)");
}

CompiledKernel DeviceImpl::compile(const KernelSource& source, const CompileOptions&) {
  throw_unsupported(*this, "compiling kernels (" + std::string(to_string(source.language)) +
                               " kernel '" + source.name + "')");
}

BufferPtr DeviceImpl::wrap_native(void*, size_t, std::function<void()>) {
  throw_unsupported(*this, "adopting memory that another library owns");
}

}  // namespace hal
