// The simulated accelerator: hal_plugin_init and the table of plugin.h. Devices with private
// memory, streams that keep simulated time from a performance model, built-in ops, and faults
// injected on request (HAL_SIM_CONFIG, see sim.hpp).
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>
#include <string>

#include "sim.hpp"

// The table's name and size, overridable so that hal's tests can build this plugin as one of an
// older minor version (a shorter table) under another name.
#ifndef SIM_BACKEND_NAME
#define SIM_BACKEND_NAME "sim"
#endif
#ifndef SIM_TABLE_SIZE
#define SIM_TABLE_SIZE sizeof(hal_plugin_api)
#endif

namespace sim {
namespace {

// Each thread's last error, under a pthread key rather than thread_local: a dlopen'ed library's
// thread_local lives in dynamic TLS, which LeakSanitizer (GCC 12) misreads and crashes on.
std::string& thread_error() {
  static const pthread_key_t key = [] {
    pthread_key_t made;
    pthread_key_create(&made, [](void* text) { delete static_cast<std::string*>(text); });
    return made;
  }();
  auto* text = static_cast<std::string*>(pthread_getspecific(key));
  if (text == nullptr) {
    text = new std::string;
    pthread_setspecific(key, text);
  }
  return *text;
}

struct Plugin {
  Config config;
  std::string config_error;
  std::deque<hal_plugin_device_s> devices;  // stable addresses
};

Plugin& plugin() {
  static Plugin instance;
  return instance;
}

const char* last_error() { return thread_error().c_str(); }

// DEVICE_LOST, once the device's streams run no device work (nor plain host callbacks) any
// more: hal may free the host memory their work used when it sees the status.
hal_status report_loss(hal_plugin_device device) {
  device->quiesce();
  return fail(HAL_STATUS_DEVICE_LOST,
              "sim:" + std::to_string(device->index) + " was lost (injected fault)");
}

// The first check of every call naming a device.
#define SIM_CHECK_DEVICE(device)                             \
  do {                                                       \
    if (!(device)->count_call()) return report_loss(device); \
  } while (0)

#ifndef HAL_SIM_ABI_1_1
// Tensors of plugin.h 1.2 carry their size: one smaller is a host's mistake.
#define SIM_CHECK_TENSOR(tensor)                                                           \
  do {                                                                                     \
    if ((tensor)->struct_size < sizeof(hal_plugin_tensor))                                 \
      return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: a tensor of " +                       \
                                                   std::to_string((tensor)->struct_size) + \
                                                   " bytes, fewer than plugin.h 1.2's");   \
  } while (0)
#else
#define SIM_CHECK_TENSOR(tensor) \
  do {                           \
  } while (0)
#endif

void copy_string(char* out, size_t size, const std::string& text) {
  std::snprintf(out, size, "%s", text.c_str());
}

hal_status device_count(uint32_t* count) {
  *count = static_cast<uint32_t>(plugin().devices.size());
  return HAL_STATUS_OK;
}

hal_status device_get(uint32_t index, hal_plugin_device* device) {
  if (index >= plugin().devices.size())
    return fail(HAL_STATUS_NOT_FOUND, "sim: no device " + std::to_string(index));
  *device = &plugin().devices[index];
  return HAL_STATUS_OK;
}

// FNV-1a of `size` bytes at `bytes`, continuing from `hash`.
uint32_t fnv1a(uint32_t hash, const void* bytes, size_t size) {
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ static_cast<const uint8_t*>(bytes)[i]) * 16777619u;
  return hash;
}

// A UUID stable across runs that names what the device is: a prefix, a hash of the backend's
// name and of the figures HAL_SIM_CONFIG gives the device (memory, bandwidth, throughput, launch
// cost: what it models), then its index. Calibrations are cached by UUID: one measured under
// another config is another device's (the UUID named the index alone, so sim:0 kept the figures
// of a config ten times slower). Faults and pacing change no figure, so not the UUID.
void write_uuid(const hal_plugin_device_s& device, uint8_t* uuid) {
  const uint8_t prefix[4] = {0x5a, 0x11, 0x0c, 0xa1};
  std::memcpy(uuid, prefix, sizeof prefix);
  const Config& c = device.config;
  uint32_t hash = fnv1a(2166136261u, SIM_BACKEND_NAME, std::strlen(SIM_BACKEND_NAME));
  hash = fnv1a(hash, &c.memory_bytes, sizeof c.memory_bytes);
  for (const double figure : {c.bandwidth_gbps, c.gflops, c.launch_us})
    hash = fnv1a(hash, &figure, sizeof figure);
  for (int i = 0; i < 4; ++i) uuid[4 + i] = static_cast<uint8_t>(hash >> (8 * (3 - i)));
  for (int i = 0; i < 8; ++i)
    uuid[8 + i] = static_cast<uint8_t>(uint64_t{device.index} >> (8 * (7 - i)));
}

hal_status device_properties(hal_plugin_device device, hal_plugin_device_properties* out) {
  SIM_CHECK_DEVICE(device);
  if (out->struct_size < offsetof(hal_plugin_device_properties, launch_latency_us) + sizeof(double))
    return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: device properties struct too small");
  const Config& c = device->config;
  copy_string(out->name, sizeof out->name, "hal simulated accelerator");
  copy_string(out->vendor, sizeof out->vendor, "hal");
  copy_string(out->architecture, sizeof out->architecture, "sim1");
  copy_string(out->driver_version, sizeof out->driver_version, "1.0");
  if (c.zero_uuid)
    std::memset(out->uuid, 0, sizeof out->uuid);
  else
    write_uuid(*device, out->uuid);
  out->kind = HAL_PLUGIN_DEVICE_ACCELERATOR;
  out->compute_units = 64;
  out->clock_mhz = 1000;
  out->memory_bytes = c.memory_bytes;
  out->max_allocation_bytes = c.memory_bytes;
  out->dtypes = (1u << HAL_PLUGIN_DTYPE_F32) | (1u << HAL_PLUGIN_DTYPE_F64) |
                (1u << HAL_PLUGIN_DTYPE_I32) | (1u << HAL_PLUGIN_DTYPE_I64);
  out->ops =
      HAL_PLUGIN_OPS_BINARY | HAL_PLUGIN_OPS_UNARY | HAL_PLUGIN_OPS_REDUCE | HAL_PLUGIN_OPS_MATMUL;
  out->peak_f32_gflops = c.gflops;
  out->peak_bandwidth_gbps = c.bandwidth_gbps;
  out->launch_latency_us = c.launch_us;
  if (out->struct_size >= offsetof(hal_plugin_device_properties, kernel_formats) + sizeof(uint32_t))
    out->kernel_formats = HAL_PLUGIN_KERNEL_NATIVE;
#ifndef HAL_SIM_ABI_1_1
  if (out->struct_size >=
      offsetof(hal_plugin_device_properties, local_memory_bytes) + sizeof(uint64_t))
    out->local_memory_bytes = kLocalMemoryBytes;
#endif
  return HAL_STATUS_OK;
}

hal_status device_memory_free(hal_plugin_device device, uint64_t* bytes) {
  SIM_CHECK_DEVICE(device);
  std::lock_guard lock(device->mutex);
  *bytes = device->config.memory_bytes - device->used_bytes;
  return HAL_STATUS_OK;
}

hal_status buffer_allocate(hal_plugin_device device, uint64_t bytes, hal_plugin_buffer* out) {
  SIM_CHECK_DEVICE(device);
  if (bytes == 0) return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: an allocation of 0 bytes");
  {
    std::lock_guard lock(device->mutex);
    const uint64_t n = ++device->allocations;
    const bool injected =
        device->index == device->config.fault_device && n == device->config.fail_alloc_at;
    const uint64_t free_bytes = device->config.memory_bytes - device->used_bytes;
    if (injected || bytes > free_bytes)
      return fail(
          HAL_STATUS_OUT_OF_MEMORY,
          "sim:" + std::to_string(device->index) + ": cannot allocate " + std::to_string(bytes) +
              " bytes; " + std::to_string(free_bytes) + " of " +
              std::to_string(device->config.memory_bytes) + " are free" +
              (injected ? " (injected fault at allocation " + std::to_string(n) + ")" : ""));
    device->used_bytes += bytes;
  }
  // No C++ exception may leave through the C table (plugin.h): a host that cannot back the
  // memory the device advertises is OUT_OF_MEMORY, and the charge is taken back.
  try {
    *out = new hal_plugin_buffer_s{device, bytes, make_arena(bytes), false};
  } catch (const std::bad_alloc&) {
    std::lock_guard lock(device->mutex);
    device->used_bytes -= bytes;
    return fail(HAL_STATUS_OUT_OF_MEMORY, "sim:" + std::to_string(device->index) +
                                              ": the host has no room for " +
                                              std::to_string(bytes) + " bytes of device memory");
  }
  return HAL_STATUS_OK;
}

#ifndef HAL_SIM_ABI_1_1
// Pinned memory is the host's: the device's memory figures leave it out.
hal_status host_buffer_allocate(hal_plugin_device device, uint64_t bytes, hal_plugin_buffer* out,
                                void** host) {
  SIM_CHECK_DEVICE(device);
  if (bytes == 0) return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: an allocation of 0 bytes");
  hal_plugin_buffer_s* buffer = nullptr;
  try {
    buffer = new hal_plugin_buffer_s{device, bytes, make_arena(bytes), true};
  } catch (const std::bad_alloc&) {
    return fail(HAL_STATUS_OUT_OF_MEMORY, "sim: the host has no room for " + std::to_string(bytes) +
                                              " bytes of pinned memory");
  }
  *host = buffer->bytes.get();
  *out = buffer;
  return HAL_STATUS_OK;
}
#endif

hal_status buffer_free(hal_plugin_buffer buffer) {
  if (!buffer->pinned) {
    std::lock_guard lock(buffer->device->mutex);
    buffer->device->used_bytes -= buffer->size;
  }
  delete buffer;
  return HAL_STATUS_OK;
}

hal_status stream_create(hal_plugin_device device, hal_plugin_stream* out) {
  SIM_CHECK_DEVICE(device);
  std::shared_ptr<hal_plugin_stream_s> stream;
  try {
    stream = std::make_shared<hal_plugin_stream_s>(device);  // starts the stream's thread
  } catch (const std::exception& error) {
    return fail(HAL_STATUS_OUT_OF_MEMORY, std::string("sim: no stream: ") + error.what());
  }
  std::lock_guard lock(device->streams_mutex);
  device->streams.push_back(stream);
  *out = stream.get();
  return HAL_STATUS_OK;
}

hal_status stream_destroy(hal_plugin_stream stream) {
  std::shared_ptr<hal_plugin_stream_s> last;  // destroyed unlocked: it runs what is left
  std::lock_guard lock(stream->device->streams_mutex);
  auto& streams = stream->device->streams;
  const auto found = std::find_if(streams.begin(), streams.end(),
                                  [&](const auto& entry) { return entry.get() == stream; });
  last = std::move(*found);
  streams.erase(found);
  return HAL_STATUS_OK;
}

// Lost or not, returns once none of the stream's work runs, host callbacks that are told of the
// loss included (plugin.h): hal frees what they used when this returns. A call on another stream
// that finds the loss need not wait for them.
hal_status stream_synchronize(hal_plugin_stream stream) {
  const bool lost_before = !stream->device->count_call();
  stream->wait_idle();
  // Lost while this waited too: work it waited for may have been dropped, so no success.
  // (Looked at, not counted as a call: lose_device_at counts calls.)
  if (lost_before || stream->device->lost.load(std::memory_order_acquire))
    return report_loss(stream->device);
  return HAL_STATUS_OK;
}

hal_status stream_query(hal_plugin_stream stream, int32_t* idle) {
  SIM_CHECK_DEVICE(stream->device);
  *idle = stream->idle() ? 1 : 0;
  return HAL_STATUS_OK;
}

hal_status check_range(const hal_plugin_buffer buffer, uint64_t offset, uint64_t bytes) {
  if (offset > buffer->size || bytes > buffer->size - offset)
    return fail(HAL_STATUS_OUT_OF_RANGE, "sim: " + std::to_string(bytes) + " bytes at offset " +
                                             std::to_string(offset) + " run past a buffer of " +
                                             std::to_string(buffer->size));
  return HAL_STATUS_OK;
}

hal_status copy_to_device(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                          const void* src, uint64_t bytes) {
  SIM_CHECK_DEVICE(stream->device);
  if (hal_status status = check_range(dst, dst_offset, bytes)) return status;
  stream->enqueue([=] {
    std::memcpy(dst->bytes.get() + dst_offset, src, bytes);
    stream->advance(static_cast<double>(bytes), 0);
  });
  return HAL_STATUS_OK;
}

hal_status copy_to_host(hal_plugin_stream stream, void* dst, hal_plugin_buffer src,
                        uint64_t src_offset, uint64_t bytes) {
  SIM_CHECK_DEVICE(stream->device);
  if (hal_status status = check_range(src, src_offset, bytes)) return status;
  stream->enqueue([=] {
    std::memcpy(dst, src->bytes.get() + src_offset, bytes);
    stream->advance(static_cast<double>(bytes), 0);
  });
  return HAL_STATUS_OK;
}

hal_status copy_on_device(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                          hal_plugin_buffer src, uint64_t src_offset, uint64_t bytes) {
  SIM_CHECK_DEVICE(stream->device);
  if (hal_status status = check_range(dst, dst_offset, bytes)) return status;
  if (hal_status status = check_range(src, src_offset, bytes)) return status;
  stream->enqueue([=] {
    std::memmove(dst->bytes.get() + dst_offset, src->bytes.get() + src_offset, bytes);
    stream->advance(2.0 * static_cast<double>(bytes), 0);
  });
  return HAL_STATUS_OK;
}

#ifndef HAL_SIM_ABI_1_1
// Between two devices: one pass over the bytes at the stream's device's bandwidth, as a DMA
// engine on the link would (copy_on_device reads and writes one device's memory: two).
hal_status copy_peer(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                     hal_plugin_buffer src, uint64_t src_offset, uint64_t bytes) {
  SIM_CHECK_DEVICE(stream->device);
  if (dst->device == src->device ||
      (dst->device != stream->device && src->device != stream->device))
    return fail(HAL_STATUS_INVALID_ARGUMENT,
                "sim: copy_peer takes buffers of two devices, one of them the stream's");
  hal_plugin_device_s* other = dst->device == stream->device ? src->device : dst->device;
  SIM_CHECK_DEVICE(other);
  if (dst->pinned || src->pinned)
    return fail(HAL_STATUS_UNSUPPORTED, "sim: copy_peer is between device memory");
  if (hal_status status = check_range(dst, dst_offset, bytes)) return status;
  if (hal_status status = check_range(src, src_offset, bytes)) return status;
  stream->enqueue([=] {
    if (other->lost.load(std::memory_order_acquire)) return;  // the far side's memory is gone
    std::memmove(dst->bytes.get() + dst_offset, src->bytes.get() + src_offset, bytes);
    stream->advance(static_cast<double>(bytes), 0);
  });
  return HAL_STATUS_OK;
}
#endif

hal_status fill(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                uint64_t bytes, const void* pattern, uint32_t pattern_size) {
  SIM_CHECK_DEVICE(stream->device);
  if (hal_status status = check_range(dst, dst_offset, bytes)) return status;
  // plugin.h: 1, 2, 4 or 8 bytes; more would overrun `value` below.
  if ((pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8) ||
      bytes % pattern_size != 0)
    return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: fill of " + std::to_string(bytes) +
                                                 " bytes with a pattern of " +
                                                 std::to_string(pattern_size));
  uint64_t value = 0;  // the pattern is the caller's only during the call
  std::memcpy(&value, pattern, pattern_size);
  stream->enqueue([=] {
    for (uint64_t at = 0; at < bytes; at += pattern_size)
      std::memcpy(dst->bytes.get() + dst_offset + at, &value, pattern_size);
    stream->advance(static_cast<double>(bytes), 0);
  });
  return HAL_STATUS_OK;
}

// On the worker: runs a host callback. The stream is held for as long as it runs: the time
// counts as the stream's.
template <class Call>
void run_held(hal_plugin_stream stream, Call call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  const auto end = std::chrono::steady_clock::now();
  const std::chrono::duration<double, std::micro> held = end - start;
  stream->clock_us += held.count();
  stream->pace_to(end);
}

hal_status host_callback(hal_plugin_stream stream, hal_plugin_host_fn fn, void* user_data) {
  SIM_CHECK_DEVICE(stream->device);
  stream->enqueue([=] { run_held(stream, [=] { fn(user_data); }); }, Work::callback);
  return HAL_STATUS_OK;
}

#ifndef HAL_SIM_ABI_1_1
hal_status host_callback_status(hal_plugin_stream stream, hal_plugin_host_status_fn fn,
                                void* user_data) {
  SIM_CHECK_DEVICE(stream->device);
  stream->enqueue(
      [=] {
        if (stream->began_after_loss()) {
          fn(user_data, HAL_STATUS_DEVICE_LOST);  // lets go of what it holds, runs nothing
          return;
        }
        run_held(stream, [=] { fn(user_data, HAL_STATUS_OK); });
      },
      Work::told_callback);
  return HAL_STATUS_OK;
}
#endif

hal_status event_create(hal_plugin_device device, hal_plugin_event* out) {
  SIM_CHECK_DEVICE(device);
  {
    std::lock_guard lock(device->mutex);
    const uint64_t n = ++device->events;
    if (device->index == device->config.fault_device && n == device->config.fail_event_at)
      return fail(HAL_STATUS_OUT_OF_MEMORY, "sim:" + std::to_string(device->index) +
                                                ": no room for event " + std::to_string(n) +
                                                " (injected fault)");
  }
  auto* event = new hal_plugin_event_s;
  event->device = device;
  *out = event;
  return HAL_STATUS_OK;
}

hal_status event_destroy(hal_plugin_event event) {
  event->release();
  return HAL_STATUS_OK;
}

hal_status event_record(hal_plugin_event event, hal_plugin_stream stream) {
  SIM_CHECK_DEVICE(stream->device);
  uint64_t record = 0;
  {
    std::lock_guard lock(event->mutex);
    record = ++event->issued;
  }
  event->retain();
  stream->enqueue(
      [=] {
        {
          std::lock_guard lock(event->mutex);
          event->done = std::max(event->done, record);
          event->time_us = stream->clock_us;
          event->paced_at = stream->paced_until;
          event->changed.notify_all();
        }
        event->release();
      },
      Work::event);
  return HAL_STATUS_OK;
}

hal_status stream_wait_event(hal_plugin_stream stream, hal_plugin_event event) {
  SIM_CHECK_DEVICE(stream->device);
  uint64_t record = 0;
  {
    std::lock_guard lock(event->mutex);
    record = event->issued;  // the latest record at the time of the call
  }
  event->retain();
  stream->enqueue(
      [=] {
        {
          std::unique_lock lock(event->mutex);
          event->changed.wait(lock, [&] { return event->done >= record; });
          stream->clock_us = std::max(stream->clock_us, event->time_us);
          stream->pace_to(event->paced_at);
        }
        event->release();
      },
      Work::event);
  return HAL_STATUS_OK;
}

hal_status event_synchronize(hal_plugin_event event) {
  SIM_CHECK_DEVICE(event->device);
  std::unique_lock lock(event->mutex);
  const uint64_t record = event->issued;
  event->changed.wait(lock, [&] { return event->done >= record; });
  return HAL_STATUS_OK;
}

hal_status event_query(hal_plugin_event event, int32_t* complete) {
  SIM_CHECK_DEVICE(event->device);
  {
    hal_plugin_device_s* device = event->device;
    std::lock_guard lock(device->mutex);
    const uint64_t n = ++device->queries;
    if (device->index == device->config.fault_device && n == device->config.fail_query_at)
      return fail(HAL_STATUS_INTERNAL, "sim:" + std::to_string(device->index) + ": event query " +
                                           std::to_string(n) + " failed (injected fault)");
  }
  std::lock_guard lock(event->mutex);
  *complete = event->done >= event->issued ? 1 : 0;
  return HAL_STATUS_OK;
}

hal_status event_elapsed_ms(hal_plugin_event start, hal_plugin_event end, double* ms) {
  SIM_CHECK_DEVICE(end->device);
  // Each read under its own event's lock (start and end may be one event).
  auto completed = [](hal_plugin_event event, double& time_us) {
    std::lock_guard lock(event->mutex);
    time_us = event->time_us;
    return event->done > 0;
  };
  double from = 0, to = 0;
  if (!completed(start, from) || !completed(end, to))
    return fail(HAL_STATUS_INVALID_STATE, "sim: elapsed time of an event never recorded");
  *ms = (to - from) / 1000.0;
  return HAL_STATUS_OK;
}

// Counts an op on the stream's device; the injected failure, if this is the one.
hal_status begin_op(hal_plugin_stream stream) {
  hal_plugin_device_s* device = stream->device;
  std::lock_guard lock(device->mutex);
  const uint64_t n = ++device->ops;
  if (device->index == device->config.fault_device && n == device->config.fail_op_at)
    return fail(HAL_STATUS_INTERNAL, "sim:" + std::to_string(device->index) + ": op " +
                                         std::to_string(n) + " failed (injected fault)");
  return HAL_STATUS_OK;
}

double bytes_of(const hal_plugin_tensor& t) {
  double n = 1;
  for (uint32_t d = 0; d < t.rank; ++d) n *= static_cast<double>(t.shape[d]);
  const double element = t.dtype == HAL_PLUGIN_DTYPE_F64 || t.dtype == HAL_PLUGIN_DTYPE_I64 ? 8 : 4;
  return n * element;
}

// Ops are checked when enqueued (views against their buffers too), so that what fails is
// reported by the call, and computed by the stream's worker on copies of the descriptions.
hal_status op_binary(hal_plugin_stream stream, hal_plugin_op op, const hal_plugin_tensor* out,
                     const hal_plugin_tensor* a, const hal_plugin_tensor* b) {
  SIM_CHECK_DEVICE(stream->device);
  SIM_CHECK_TENSOR(out);
  SIM_CHECK_TENSOR(a);
  SIM_CHECK_TENSOR(b);
  if (hal_status status = check_binary(op, *out, *a, *b)) return status;
  if (hal_status status = begin_op(stream)) return status;
  stream->enqueue([stream, op, o = *out, x = *a, y = *b] {
    binary(op, o, x, y);
    stream->advance(3 * bytes_of(o), bytes_of(o) / 4);
  });
  return HAL_STATUS_OK;
}

hal_status op_unary(hal_plugin_stream stream, hal_plugin_op op, const hal_plugin_tensor* out,
                    const hal_plugin_tensor* x) {
  SIM_CHECK_DEVICE(stream->device);
  SIM_CHECK_TENSOR(out);
  SIM_CHECK_TENSOR(x);
  if (hal_status status = check_unary(op, *out, *x)) return status;
  if (hal_status status = begin_op(stream)) return status;
  stream->enqueue([stream, op, o = *out, in = *x] {
    unary(op, o, in);
    stream->advance(2 * bytes_of(o), bytes_of(o) / 4);
  });
  return HAL_STATUS_OK;
}

hal_status op_reduce(hal_plugin_stream stream, hal_plugin_op op, const hal_plugin_tensor* out,
                     const hal_plugin_tensor* x, uint32_t axes) {
  SIM_CHECK_DEVICE(stream->device);
  SIM_CHECK_TENSOR(out);
  SIM_CHECK_TENSOR(x);
  if (hal_status status = check_reduce(op, *out, *x, axes)) return status;
  if (hal_status status = begin_op(stream)) return status;
  stream->enqueue([stream, op, o = *out, in = *x, axes] {
    reduce(op, o, in, axes);
    stream->advance(bytes_of(in) + bytes_of(o), bytes_of(in) / 4);
  });
  return HAL_STATUS_OK;
}

hal_status op_matmul(hal_plugin_stream stream, const hal_plugin_gemm* gemm) {
  SIM_CHECK_DEVICE(stream->device);
  if (gemm->struct_size < sizeof(hal_plugin_gemm))
    return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: gemm struct too small");
  if (hal_status status = check_matmul(*gemm)) return status;
  if (hal_status status = begin_op(stream)) return status;
  stream->enqueue([stream, g = *gemm] {
    matmul(g);
    const double element = g.dtype == HAL_PLUGIN_DTYPE_F64 ? 8 : 4;
    const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
                 k = static_cast<double>(g.k), batch = static_cast<double>(g.batch);
    stream->advance(batch * (m * k + k * n + m * n) * element, 2 * batch * m * n * k);
  });
  return HAL_STATUS_OK;
}

hal_status kernel_compile(hal_plugin_device device, uint32_t format, const char* source,
                          size_t source_size, const char* entry, const char* options,
                          hal_plugin_kernel* kernel) {
  SIM_CHECK_DEVICE(device);
  return compile_kernel(format, std::string(source, source_size), entry, options ? options : "",
                        kernel);
}

hal_status kernel_destroy(hal_plugin_kernel kernel) {
  delete kernel;
  return HAL_STATUS_OK;
}

hal_status kernel_launch(hal_plugin_stream stream, hal_plugin_kernel kernel,
                         const uint64_t global[3], const uint32_t local[3],
                         const hal_plugin_kernel_arg* args, uint32_t arg_count) {
  SIM_CHECK_DEVICE(stream->device);
  std::vector<hal_plugin_kernel_arg> copied;  // arguments are hal's only during the call
  if (hal_status status = read_args(args, arg_count, copied)) return status;
  const uint64_t group = local[0] != 0 ? local[0] : kDefaultGroup;
  uint64_t items = 0;  // a wrapped count would slip past check_launch's bounds
  if (__builtin_mul_overflow(global[0], global[1], &items) ||
      __builtin_mul_overflow(items, global[2], &items))
    return fail(HAL_STATUS_INVALID_ARGUMENT,
                "sim: kernel '" + kernel->entry + "': " + std::to_string(global[0]) + " x " +
                    std::to_string(global[1]) + " x " + std::to_string(global[2]) +
                    " work-items: the count overflows 64 bits");
  if (hal_status status = check_launch(*kernel, copied, items, group)) return status;
  if (hal_status status = begin_op(stream)) return status;  // launch failures are injected here
  // A copy of the kernel's description too: hal may destroy the kernel once this returns.
  stream->enqueue([stream, k = *kernel, items, group, a = std::move(copied)] {
    run_kernel(k, items, group, a);
    stream->advance(8.0 * static_cast<double>(items), 2.0 * static_cast<double>(items));
  });
  return HAL_STATUS_OK;
}

const hal_plugin_api kApi = {
    SIM_TABLE_SIZE,
    HAL_PLUGIN_ABI_MAJOR,
    HAL_PLUGIN_ABI_MINOR,
    SIM_BACKEND_NAME,
    "1.0",
    last_error,
    device_count,
    device_get,
    device_properties,
    device_memory_free,
    buffer_allocate,
    buffer_free,
    stream_create,
    stream_destroy,
    stream_synchronize,
    stream_query,
    copy_to_device,
    copy_to_host,
    copy_on_device,
    fill,
    host_callback,
    event_create,
    event_destroy,
    event_record,
    stream_wait_event,
    event_synchronize,
    event_query,
    event_elapsed_ms,
    op_binary,
    op_unary,
    op_reduce,
    op_matmul,
    kernel_compile,
    kernel_destroy,
    kernel_launch,
#ifndef HAL_SIM_ABI_1_1
    host_buffer_allocate,
    copy_peer,
    host_callback_status,
#endif
};

}  // namespace

hal_status fail(hal_status status, std::string message) {
  thread_error() = std::move(message);
  return status;
}

}  // namespace sim

bool hal_plugin_device_s::count_call() {
  if (lost.load(std::memory_order_acquire)) return false;
  if (index != config.fault_device || config.lose_device_at == 0) return true;
  std::lock_guard lock(mutex);
  if (++calls >= config.lose_device_at) {
    lost.store(true, std::memory_order_release);
    return false;
  }
  return true;
}

void hal_plugin_device_s::quiesce() {
  std::vector<std::shared_ptr<hal_plugin_stream_s>> all;
  {
    std::lock_guard lock(streams_mutex);
    all = streams;
  }
  for (const auto& stream : all)
    if (!stream->on_worker()) stream->wait_settled();  // a host callback may be what calls
}

void ArenaDelete::operator()(unsigned char* bytes) const {
  ::operator delete[](bytes, std::align_val_t{256});
}

Arena make_arena(uint64_t bytes) {
  Arena arena(static_cast<unsigned char*>(::operator new[](bytes, std::align_val_t{256})));
  std::memset(arena.get(), 0, bytes);
  return arena;
}

hal_plugin_stream_s::hal_plugin_stream_s(hal_plugin_device_s* owner)
    : device(owner), worker_([this] { run(); }) {}

hal_plugin_stream_s::~hal_plugin_stream_s() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void hal_plugin_stream_s::enqueue(std::function<void()> work, Work kind) {
  const WallClock::time_point now =
      device->config.pace ? WallClock::now() : WallClock::time_point{};
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({std::move(work), kind, now});
    if (kind == Work::callback) ++queued_callbacks_;
  }
  changed_.notify_all();
}

void hal_plugin_stream_s::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void hal_plugin_stream_s::wait_settled() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] {
    const bool held = busy_ && (running_ == Work::device || running_ == Work::callback);
    return !held && queued_callbacks_ == 0;
  });
}

bool hal_plugin_stream_s::on_worker() const {
  return worker_.get_id() == std::this_thread::get_id();
}

bool hal_plugin_stream_s::idle() {
  std::lock_guard lock(mutex_);
  return queue_.empty() && !busy_;
}

void hal_plugin_stream_s::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything has run
    Item item = std::move(queue_.front());
    queue_.pop_front();
    if (item.kind == Work::callback) --queued_callbacks_;
    busy_ = true;
    running_ = item.kind;
    // Under the lock: a loss stored before quiesce looked is seen here, and quiesce finds this
    // item running if it looked first.
    began_after_loss_ = device->lost.load(std::memory_order_acquire);
    lock.unlock();
    item_start_ = std::max(paced_until, item.enqueued);
    if (item.kind != Work::device || !began_after_loss_) item.work();
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

void hal_plugin_stream_s::advance(double bytes, double flops) {
  const sim::Config& c = device->config;
  // bytes / (GB/s) is ns; flops / (GFLOP/s) is ns.
  const double modelled_us =
      c.launch_us + std::max(bytes / c.bandwidth_gbps, flops / c.gflops) / 1000.0;
  clock_us += modelled_us;
  if (!c.pace) return;
  // The host's own time for the work (the copy, the arithmetic) counts towards the deadline:
  // the work started at item_start_ on the timeline. Sleeping, not spinning, so that a fleet
  // of paced devices runs on a few host cores.
  paced_until = item_start_ + std::chrono::duration_cast<WallClock::duration>(
                                  std::chrono::duration<double, std::micro>(modelled_us));
  std::this_thread::sleep_until(paced_until);
}

void hal_plugin_stream_s::pace_to(WallClock::time_point time) {
  if (device->config.pace) paced_until = std::max(paced_until, time);
}

extern "C" __attribute__((visibility("default"))) hal_status hal_plugin_init(
    const hal_plugin_host_info* host, const hal_plugin_api** api) {
  using sim::fail;
  *api = &sim::kApi;  // last_error explains a failure
  if (host == nullptr || host->abi_major != HAL_PLUGIN_ABI_MAJOR)
    return fail(HAL_STATUS_ABI_MISMATCH,
                "sim speaks plugin ABI " + std::to_string(HAL_PLUGIN_ABI_MAJOR) + "." +
                    std::to_string(HAL_PLUGIN_ABI_MINOR) + ", the host " +
                    (host ? std::to_string(host->abi_major) + "." + std::to_string(host->abi_minor)
                          : std::string("gave no version")));
  sim::Plugin& p = sim::plugin();
  if (p.devices.empty()) {
    // Without HAL_SIM_CONFIG the plugin loads but shows no devices: simulated ones appear
    // only where someone asked for them.
    const char* text = std::getenv("HAL_SIM_CONFIG");
    if (text == nullptr) p.config.devices = 0;
    std::string error;
    if (!sim::parse_config(text, p.config, error)) return fail(HAL_STATUS_INVALID_ARGUMENT, error);
    for (uint32_t i = 0; i < p.config.devices; ++i) {
      hal_plugin_device_s& device = p.devices.emplace_back();
      device.index = i;
      device.config = sim::config_of_device(p.config, i);
    }
  }
  return HAL_STATUS_OK;
}
