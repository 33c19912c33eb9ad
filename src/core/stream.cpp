// Stream: argument checks and routing; the backend's StreamImpl does the work.
#include "hal/stream.hpp"
#include "core/error_context.hpp"

#include <chrono>
#include <limits>
#include <optional>

#include "core/callback_thread.hpp"
#include "core/kernel_arg_check.hpp"
#include "core/staged_copy.hpp"
#include "core/trace_record.hpp"
#include "hal/backend.hpp"
#include "hal/device.hpp"

namespace hal {
namespace {

StreamImpl& checked(const std::shared_ptr<StreamImpl>& impl) {
  if (!impl)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Stream");
  return *impl;
}

std::string where(const StreamImpl& stream, std::string_view operation) {
  return std::string(operation) + " on a stream of " + stream.device().info().id;
}

const BufferPtr& checked_buffer(const StreamImpl& stream, std::string_view operation,
                                const Buffer& buffer, std::string_view role) {
  if (!buffer)
    throw Error(ErrorCode::InvalidArgument,
                where(stream, operation) + ": the " + std::string(role) + " buffer is empty");
  return buffer.impl();
}

void check_range(const StreamImpl& stream, std::string_view operation, const BufferImpl& buffer,
                 std::string_view role, size_t offset, size_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    throw Error(ErrorCode::OutOfRange, where(stream, operation) + ": " + std::to_string(bytes) +
                                           " bytes at offset " + std::to_string(offset) +
                                           " run past the end of the " + std::string(role) +
                                           " buffer of " + std::to_string(buffer.size()) +
                                           " bytes on " + buffer.device().info().id);
}

void check_host_pointer(const StreamImpl& stream, std::string_view operation, const void* pointer,
                        size_t bytes) {
  if (!pointer && bytes > 0)
    throw Error(ErrorCode::InvalidArgument, where(stream, operation) +
                                                ": the host pointer is null for " +
                                                std::to_string(bytes) + " bytes");
}

bool same_backend(const DeviceImpl& a, const DeviceImpl& b) {
  return a.info().backend() == b.info().backend();
}

// A span on the stream's track while tracing (hal/trace.hpp); nothing otherwise.
using TracedSpan = std::optional<trace::detail::Span>;
using SpanArgs = trace::detail::SpanArgs;
void trace_on(TracedSpan& span, const StreamImpl& stream, std::string_view category,
              std::string name, const SpanArgs& args = {}) {
  span.emplace(trace::detail::stream_track(stream), category, std::move(name), args);
}
using trace::detail::bytes_args;
using trace::detail::launch_args;

// The traced path of a call, apart from its untraced body (always inlined into the untraced
// path) so that tracing off costs the body one branch (a span alive across the body would keep
// it from ending in a tail call).
// A literal name is kept by reference (no copy, no strlen); not cold, which would have the
// compiler build its string_views out of line.
template <class Name, class Body>
[[gnu::noinline]] void traced(const StreamImpl& stream, std::string_view category, const Name& name,
                              const SpanArgs& args, Body&& body) {
  const trace::detail::Span span(trace::detail::stream_track(stream), category, name, args);
  body();
}

}  // namespace

Device Stream::device() const { return Device(checked(impl_).device().shared_from_this()); }

namespace {
[[gnu::always_inline]] inline void copy_from_host_untraced(const std::shared_ptr<StreamImpl>& self,
                                                           const Buffer& dst, const void* src,
                                                           size_t bytes, size_t dst_offset) {
  StreamImpl& stream = checked(self);
  const detail::ErrorContext context(stream.device().info().id, "copy_from_host");
  const BufferPtr& target = checked_buffer(stream, "copy_from_host", dst, "destination");
  check_host_pointer(stream, "copy_from_host", src, bytes);
  check_range(stream, "copy_from_host", *target, "destination", dst_offset, bytes);
  if (bytes == 0) return;
  if (&target->device() == &stream.device()) {
    stream.copy_from_host(target, dst_offset, src, bytes);
    return;
  }
  // A buffer of another device: written in this stream's order, from a host callback.
  stream.host_callback(
      [target, dst_offset, src, bytes] { detail::write_now(target, dst_offset, src, bytes); });
}
}  // namespace

void Stream::copy_from_host(const Buffer& dst, const void* src, size_t bytes, size_t dst_offset) {
  if (trace::enabled()) [[unlikely]]
    return traced(checked(impl_), "copy", "copy_from_host", bytes_args(bytes),
                  [&] { copy_from_host_untraced(impl_, dst, src, bytes, dst_offset); });
  copy_from_host_untraced(impl_, dst, src, bytes, dst_offset);
}

namespace {
[[gnu::always_inline]] inline void copy_to_host_untraced(const std::shared_ptr<StreamImpl>& self,
                                                         void* dst, const Buffer& src, size_t bytes,
                                                         size_t src_offset) {
  StreamImpl& stream = checked(self);
  const detail::ErrorContext context(stream.device().info().id, "copy_to_host");
  const BufferPtr& source = checked_buffer(stream, "copy_to_host", src, "source");
  check_host_pointer(stream, "copy_to_host", dst, bytes);
  check_range(stream, "copy_to_host", *source, "source", src_offset, bytes);
  if (bytes == 0) return;
  if (&source->device() == &stream.device()) {
    stream.copy_to_host(dst, source, src_offset, bytes);
    return;
  }
  stream.host_callback(
      [source, src_offset, dst, bytes] { detail::read_now(dst, source, src_offset, bytes); });
}
}  // namespace

void Stream::copy_to_host(void* dst, const Buffer& src, size_t bytes, size_t src_offset) {
  if (trace::enabled()) [[unlikely]]
    return traced(checked(impl_), "copy", "copy_to_host", bytes_args(bytes),
                  [&] { copy_to_host_untraced(impl_, dst, src, bytes, src_offset); });
  copy_to_host_untraced(impl_, dst, src, bytes, src_offset);
}

namespace {
[[gnu::always_inline]] inline void copy_untraced(const std::shared_ptr<StreamImpl>& self,
                                                 const Buffer& dst, const Buffer& src, size_t bytes,
                                                 size_t dst_offset, size_t src_offset) {
  StreamImpl& stream = checked(self);
  const detail::ErrorContext context(stream.device().info().id, "copy");
  const BufferPtr& target = checked_buffer(stream, "copy", dst, "destination");
  const BufferPtr& source = checked_buffer(stream, "copy", src, "source");
  check_range(stream, "copy", *target, "destination", dst_offset, bytes);
  check_range(stream, "copy", *source, "source", src_offset, bytes);
  if (bytes == 0) return;
  const DeviceImpl& here = stream.device();
  if (same_backend(target->device(), here) && same_backend(source->device(), here) &&
      stream.copy(target, dst_offset, source, src_offset, bytes))
    return;
  detail::enqueue_staged_copy(stream, target, dst_offset, source, src_offset, bytes);
}
}  // namespace

void Stream::copy(const Buffer& dst, const Buffer& src, size_t bytes, size_t dst_offset,
                  size_t src_offset) {
  if (trace::enabled()) [[unlikely]]
    return traced(checked(impl_), "copy", "copy", bytes_args(bytes),
                  [&] { copy_untraced(impl_, dst, src, bytes, dst_offset, src_offset); });
  copy_untraced(impl_, dst, src, bytes, dst_offset, src_offset);
}

namespace {
[[gnu::always_inline]] inline void fill_untraced(const std::shared_ptr<StreamImpl>& self,
                                                 const Buffer& dst, const void* pattern,
                                                 size_t pattern_size, size_t bytes,
                                                 size_t dst_offset) {
  StreamImpl& stream = checked(self);
  const detail::ErrorContext context(stream.device().info().id, "fill");
  const BufferPtr& target = checked_buffer(stream, "fill", dst, "destination");
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8 &&
      pattern_size != 16)
    throw Error(ErrorCode::InvalidArgument, where(stream, "fill") + ": pattern of " +
                                                std::to_string(pattern_size) +
                                                " bytes; use 1, 2, 4, 8 or 16");
  check_host_pointer(stream, "fill", pattern, pattern_size);
  if (bytes % pattern_size != 0)
    throw Error(ErrorCode::InvalidArgument, where(stream, "fill") + ": " + std::to_string(bytes) +
                                                " bytes is not a multiple of the " +
                                                std::to_string(pattern_size) + "-byte pattern");
  check_range(stream, "fill", *target, "destination", dst_offset, bytes);
  if (&target->device() != &stream.device())
    throw Error(ErrorCode::InvalidArgument,
                where(stream, "fill") + ": the buffer belongs to " + target->device().info().id);
  if (bytes == 0) return;
  stream.fill(target, dst_offset, bytes, pattern, pattern_size);
}
}  // namespace

void Stream::throw_fill_overflow(size_t count, size_t first, size_t element_size) {
  throw Error(ErrorCode::OutOfRange, "fill of " + std::to_string(count) + " elements of " +
                                         std::to_string(element_size) + " bytes from element " +
                                         std::to_string(first) +
                                         ": the byte count or offset passes 2^64");
}

void Stream::fill(const Buffer& dst, const void* pattern, size_t pattern_size, size_t bytes,
                  size_t dst_offset) {
  if (trace::enabled()) [[unlikely]]
    return traced(checked(impl_), "copy", "fill", bytes_args(bytes),
                  [&] { fill_untraced(impl_, dst, pattern, pattern_size, bytes, dst_offset); });
  fill_untraced(impl_, dst, pattern, pattern_size, bytes, dst_offset);
}

void Stream::host_callback(std::function<void()> fn) {
  StreamImpl& stream = checked(impl_);
  const detail::ErrorContext context(stream.device().info().id, "host_callback");
  if (!fn)
    throw Error(ErrorCode::InvalidArgument, where(stream, "host_callback") + ": empty function");
  // The callback runs marked as this stream's, so that a synchronize of the same stream from
  // inside it, which would wait for itself forever, is refused instead; its captures are dropped
  // marked too, so that a deleter's synchronize returns.
  stream.host_callback(detail::HeldCallback(&stream, std::move(fn)));
}

void detail::host_callback_even_if_lost(StreamImpl& stream, std::function<void()> fn) {
  const detail::ErrorContext context(stream.device().info().id, "host_callback");
  stream.host_callback_even_if_lost(HeldCallback(&stream, std::move(fn)));
}

void Stream::keep_until_done(std::shared_ptr<const void> value) {
  StreamImpl& stream = checked(impl_);
  if (!value)
    throw Error(ErrorCode::InvalidArgument, where(stream, "keep_until_done") + ": empty pointer");
  stream.keep_until_done(std::move(value));
}

namespace {
[[gnu::always_inline]] inline void launch_untraced(const std::shared_ptr<StreamImpl>& self,
                                                   const Kernel& kernel, const LaunchConfig& config,
                                                   std::span<const KernelArg> args) {
  StreamImpl& stream = checked(self);
  DeviceImpl& device = stream.device();  // asked once: a virtual call
  const DeviceInfo& info = device.info();
  const detail::ErrorContext context(info.id, "launch");
  if (!kernel) throw Error(ErrorCode::InvalidArgument, where(stream, "launch") + ": empty kernel");
  // Messages are built only on failure: launch is on the hot path.
  auto what = [&] { return where(stream, "launch of '" + kernel.name() + "'"); };
  const bool host_kernel = kernel.impl()->is_host();
  if (host_kernel && !info.has_feature(feature::kHostKernels))
    throw Error(ErrorCode::Unsupported,
                what() + ": a host (C++) kernel, and " + info.id + " runs only compiled kernels");
  if (const DeviceImpl* home = kernel.impl()->device(); home && home != &device)
    throw Error(ErrorCode::InvalidArgument, what() + ": the kernel was compiled for " +
                                                home->info().id + "; compile it for " + info.id);
  uint64_t total = 1;
  for (uint64_t extent : config.global) {
    if (extent == 0)
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": global size {" + std::to_string(config.global[0]) + ", " +
                      std::to_string(config.global[1]) + ", " + std::to_string(config.global[2]) +
                      "} has a zero dimension");
    if (total > std::numeric_limits<uint64_t>::max() / extent)
      throw Error(ErrorCode::InvalidArgument, what() + ": global size overflows 64 bits");
    total *= extent;
  }
  if (const auto& params = kernel.impl()->params())
    if (auto mismatch = detail::argument_mismatch(*params, args)) [[unlikely]]
      throw Error(ErrorCode::InvalidArgument, what() + ": " + *mismatch);
  // Work-group memory in all: the dynamic shared memory of the launch and the local-memory
  // arguments, the sum saturating (two of 2^63 bytes must not wrap to 0 and pass).
  uint64_t local_bytes = config.shared_bytes;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    if (arg.kind() != KernelArg::Kind::local_memory) continue;
    // Checked here too for kernels whose signature hal does not know (a driver refuses 0).
    if (arg.offset() == 0)
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": argument " + std::to_string(i) +
                      ": 0 bytes of local memory (local memory needs at least 1 byte)");
    if (__builtin_add_overflow(local_bytes, arg.offset(), &local_bytes)) local_bytes = UINT64_MAX;
  }
  if (local_bytes > 0 && info.limits.max_shared_memory_bytes > 0 &&
      local_bytes > info.limits.max_shared_memory_bytes)
    throw Error(ErrorCode::InvalidArgument,
                what() + ": " + std::to_string(local_bytes) + " bytes of local memory" +
                    (info.backend() == "cuda" ? " (CUDA's dynamic shared memory)" : "") +
                    ", more than " + info.id + "'s work-groups hold (" +
                    std::to_string(info.limits.max_shared_memory_bytes) + ")");
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    if (arg.kind() != KernelArg::Kind::buffer) continue;
    auto which = [&] { return what() + ": argument " + std::to_string(i); };
    if (!arg.buffer()) throw Error(ErrorCode::InvalidArgument, which() + " is an empty buffer");
    const BufferImpl& buffer = *arg.buffer().impl();
    if (arg.offset() > buffer.size())
      throw Error(ErrorCode::OutOfRange, which() + ": offset " + std::to_string(arg.offset()) +
                                             " is past the end of its " +
                                             std::to_string(buffer.size()) + "-byte buffer");
    const bool reachable =
        &buffer.device() == &device || (host_kernel && buffer.host_pointer() != nullptr);
    if (!reachable)
      throw Error(ErrorCode::InvalidArgument, which() + " is a buffer of " +
                                                  buffer.device().info().id + ", not of " +
                                                  info.id + "; copy it first");
  }
  stream.launch(kernel.impl(), config, args);
}
}  // namespace

void Stream::launch(const Kernel& kernel, const LaunchConfig& config,
                    std::span<const KernelArg> args) {
  if (trace::enabled()) [[unlikely]]
    return traced(checked(impl_), "kernel", kernel ? kernel.name() : "", launch_args(config),
                  [&] { launch_untraced(impl_, kernel, config, args); });
  launch_untraced(impl_, kernel, config, args);
}

void Stream::record(const Event& event) {
  StreamImpl& stream = checked(impl_);
  const detail::ErrorContext context(stream.device().info().id, "record");
  if (!event) throw Error(ErrorCode::InvalidArgument, where(stream, "record") + ": empty event");
  if (&event.impl()->device() != &stream.device())
    throw Error(ErrorCode::InvalidArgument, where(stream, "record") + ": the event belongs to " +
                                                event.impl()->device().info().id);
  TracedSpan traced;
  if (trace::enabled()) [[unlikely]] {
    trace_on(traced, stream, "event", "record");
    trace::detail::flow_from_record(trace::detail::stream_track(stream), *event.impl(),
                                    trace::detail::now());
  }
  stream.record(*event.impl());
}

Event Stream::record() {
  Event event(checked(impl_).device().create_event());
  record(event);
  return event;
}

void Stream::wait(const Event& event) {
  StreamImpl& stream = checked(impl_);
  const detail::ErrorContext context(stream.device().info().id, "wait");
  if (!event) throw Error(ErrorCode::InvalidArgument, where(stream, "wait") + ": empty event");
  EventImpl& target = *event.impl();
  TracedSpan traced;
  if (trace::enabled()) [[unlikely]] {
    trace_on(traced, stream, "event", "wait for " + target.device().info().id);
    trace::detail::flow_to_wait(trace::detail::stream_track(stream), target, trace::detail::now());
  }
  auto fence = target.fence();
  if (!fence)
    throw Error(ErrorCode::InvalidState, where(stream, "wait") + ": the event of " +
                                             target.device().info().id +
                                             " was never recorded; record it on a stream first");
  if (same_backend(target.device(), stream.device())) {
    stream.wait(target);
    return;
  }
  if (fence->ready()) return;
  stream.host_callback([fence] { fence->wait(); });
}

void Stream::launch(const Graph& graph) {
  StreamImpl& stream = checked(impl_);
  if (!graph) throw Error(ErrorCode::InvalidArgument, where(stream, "launch") + ": empty graph");
  if (&graph.impl()->device() != &stream.device())
    throw Error(ErrorCode::InvalidArgument, where(stream, "launch of a graph") +
                                                ": the graph was captured on " +
                                                graph.impl()->device().info().id +
                                                "; capture it on " + stream.device().info().id);
  TracedSpan traced;
  if (trace::enabled()) [[unlikely]]
    trace_on(traced, stream, "kernel", "graph", {SpanArgs::Kind::nodes, {graph.node_count()}});
  stream.launch_graph(graph.impl());
}

void Stream::begin_capture() { checked(impl_).begin_capture(); }

Graph Stream::end_capture() { return Graph(checked(impl_).end_capture()); }

Device Graph::device() const {
  if (!impl_) throw Error(ErrorCode::InvalidArgument, "device() of an empty graph");
  return Device(impl_->device().shared_from_this());
}

size_t Graph::node_count() const { return impl_ ? impl_->node_count() : 0; }

namespace {
[[gnu::always_inline]] inline void synchronize_untraced(const std::shared_ptr<StreamImpl>& self) {
  StreamImpl& stream = checked(self);
  const detail::ErrorContext context(stream.device().info().id, "synchronize");
  // From a deleter of what the stream's own callback held, on the backend's callback thread:
  // the work before the callback is done, and waiting for the rest could wait for this very
  // thread (later work may or may not wait for it, as the backend orders callbacks).
  if (detail::ReleasingCallback::of(&stream)) return;
  if (detail::RunningCallback::of(&stream))
    throw Error(ErrorCode::InvalidState,
                where(stream, "synchronize") +
                    " from one of the stream's own host callbacks: it would wait for itself; "
                    "record an event and wait for it elsewhere");
  stream.synchronize();
}
}  // namespace

void Stream::synchronize() {
  if (trace::enabled()) [[unlikely]]
    return traced(checked(impl_), "synchronize", "synchronize", {},
                  [&] { synchronize_untraced(impl_); });
  synchronize_untraced(impl_);
}
bool Stream::query() { return checked(impl_).query(); }

double timed_on_device(Stream& stream, const std::function<void()>& enqueue) {
  const auto host_start = std::chrono::steady_clock::now();
  const Event start = stream.record();
  enqueue();
  const Event end = stream.record();
  end.synchronize();
  const double device_ms = Event::elapsed_ms(start, end);
  if (device_ms > 0) return device_ms / 1e3;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
}

}  // namespace hal
