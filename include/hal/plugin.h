/* hal's plugin ABI: how a shared library brings its devices into hal. C only, no hal headers.
 *
 * A plugin exports one symbol, hal_plugin_init. hal calls it once, with what hal speaks; the
 * plugin returns a table of functions that lives as long as the library stays loaded.
 *
 * Versions. HAL_PLUGIN_ABI_MAJOR changes only when something already released changes: hal
 * refuses a plugin of another major version (and a plugin should refuse a host of another).
 * Minor versions only add: new tables and structs grow at the end, never in the middle, and
 * every struct starts with its struct_size, so each side reads only what the other filled in.
 * A plugin built against an older minor works with a newer hal: what it lacks is NULL to hal,
 * and hal passes it the structs of the header it was built with (see 1.2 below).
 *
 * Calls. Every function returns a hal_status; on failure, last_error() gives a message for the
 * calling thread's most recent failed call (valid until that thread's next call). Handles are
 * opaque and owned by the plugin; hal destroys what it created through the matching function.
 * No C++ types, exceptions or allocator ownership cross this boundary: buffers of hal's that a
 * plugin reads or writes (host pointers in copies) are valid only during the call, or, for
 * stream work, until that work completes.
 *
 * Threads. Every function may be called from any thread at any time, except that one stream's
 * calls are never made concurrently with each other.
 *
 * Streams run their work in order, asynchronously or not: a plugin may complete work before the
 * call returns. A device lost stays lost: every later call on it returns
 * HAL_STATUS_DEVICE_LOST. Work its streams had not started is dropped, except host callbacks,
 * which are still called (host_callback's run; host_callback_status's are told of the loss), so
 * that what they hold is released; stream_synchronize and stream_destroy return only once no
 * work of the stream runs any more, lost device or not, because hal frees the host memory that
 * work used as soon as they return. Any call that returns DEVICE_LOST returns only once no
 * device work of the device runs any more, since hal may free the host memory of work it had
 * queued (a pending copy_to_host) as soon as it sees the status. Host callbacks enqueued with
 * host_callback are waited for there too; those of host_callback_status (1.3) are not: one that
 * began before the loss may still be running (it may be waiting for the thread that made the
 * call), and one that begins after it is told so.
 *
 * History: 1.0 devices, memory, streams, events, built-in ops; 1.1 kernels (kernel_formats,
 * kernel_compile, kernel_destroy, kernel_launch); 1.2 struct_size first in hal_plugin_tensor and
 * hal_plugin_kernel_arg (the two structs that lacked it; hal hands plugins of 1.0 and 1.1 the
 * layouts of their own header), local-memory kernel arguments (local_memory_bytes,
 * HAL_PLUGIN_ARG_LOCAL_MEMORY), pinned host memory (host_buffer_allocate), copies between
 * devices (copy_peer; copy_on_device keeps to one device), and what a lost device's streams do
 * with their pending work (below); 1.3 host callbacks told whether their device was lost
 * (host_callback_status); 1.4 the dtypes I16, U16, U32 and U64 (a plugin of an older minor
 * never lists them, so hal never hands it such a tensor).
 *
 * Optional functions are marked so; a NULL one means the plugin lacks that capability, and
 * hal reports Unsupported (or runs the op on the CPU, if the caller allows it). */
#ifndef HAL_PLUGIN_H_
#define HAL_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HAL_PLUGIN_ABI_MAJOR 1
#define HAL_PLUGIN_ABI_MINOR 4

/* The name of the one exported symbol. */
#define HAL_PLUGIN_INIT_SYMBOL "hal_plugin_init"

/* Values never change once released (they are hal::ErrorCode's). */
typedef int32_t hal_status;
#define HAL_STATUS_OK 0
#define HAL_STATUS_INVALID_ARGUMENT 1
#define HAL_STATUS_OUT_OF_MEMORY 2
#define HAL_STATUS_UNSUPPORTED 3
#define HAL_STATUS_COMPILE_FAILED 4
#define HAL_STATUS_DEVICE_LOST 5
#define HAL_STATUS_UNAVAILABLE 6
#define HAL_STATUS_ABI_MISMATCH 7
#define HAL_STATUS_NOT_FOUND 8
#define HAL_STATUS_INVALID_STATE 9
#define HAL_STATUS_OUT_OF_RANGE 10
#define HAL_STATUS_TIMEOUT 11
#define HAL_STATUS_INTERNAL 12

/* Element types, as hal::DType numbers them. */
typedef int32_t hal_plugin_dtype;
#define HAL_PLUGIN_DTYPE_F32 0
#define HAL_PLUGIN_DTYPE_F16 1
#define HAL_PLUGIN_DTYPE_BF16 2
#define HAL_PLUGIN_DTYPE_F64 3
#define HAL_PLUGIN_DTYPE_I8 4
#define HAL_PLUGIN_DTYPE_U8 5
#define HAL_PLUGIN_DTYPE_I32 6
#define HAL_PLUGIN_DTYPE_I64 7
#define HAL_PLUGIN_DTYPE_BOOL 8
#define HAL_PLUGIN_DTYPE_I16 9 /* since 1.4, as the three below */
#define HAL_PLUGIN_DTYPE_U16 10
#define HAL_PLUGIN_DTYPE_U32 11
#define HAL_PLUGIN_DTYPE_U64 12

typedef struct hal_plugin_device_s* hal_plugin_device; /* owned by the plugin, never freed */
typedef struct hal_plugin_buffer_s* hal_plugin_buffer;
typedef struct hal_plugin_stream_s* hal_plugin_stream;
typedef struct hal_plugin_event_s* hal_plugin_event;
typedef struct hal_plugin_kernel_s* hal_plugin_kernel; /* since 1.1 */

/* What hal passes to hal_plugin_init. */
typedef struct hal_plugin_host_info {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* host_version; /* hal's version, "0.1.0" */
  const char* plugin_path;  /* the file hal loaded */
} hal_plugin_host_info;

/* Device kinds. */
#define HAL_PLUGIN_DEVICE_ACCELERATOR 0
#define HAL_PLUGIN_DEVICE_GPU 1
#define HAL_PLUGIN_DEVICE_CPU 2

/* Built-in ops a device offers (hal_plugin_device_properties.ops). */
#define HAL_PLUGIN_OPS_BINARY (1u << 0)
#define HAL_PLUGIN_OPS_UNARY (1u << 1)
#define HAL_PLUGIN_OPS_REDUCE (1u << 2)
#define HAL_PLUGIN_OPS_MATMUL (1u << 3)

/* Kernel formats a device compiles (hal_plugin_device_properties.kernel_formats, since 1.1). */
#define HAL_PLUGIN_KERNEL_PORTABLE (1u << 0) /* hal's portable dialect, hal's prelude included */
#define HAL_PLUGIN_KERNEL_OPENCL_C (1u << 1)
#define HAL_PLUGIN_KERNEL_NATIVE (1u << 2) /* the device's own format, as its vendor documents */

/* A device's facts, filled by device_properties. hal zeroes the struct and sets struct_size;
 * the plugin writes the fields that fit in both its version and struct_size. Strings are
 * NUL-terminated and truncated to fit. */
typedef struct hal_plugin_device_properties {
  size_t struct_size;
  char name[128];
  char vendor[64];
  char architecture[64];
  char driver_version[64];
  uint8_t uuid[16]; /* stable across runs */
  int32_t kind;     /* HAL_PLUGIN_DEVICE_* */
  uint32_t compute_units;
  uint32_t clock_mhz;
  uint64_t memory_bytes;         /* total */
  uint64_t max_allocation_bytes; /* largest single buffer */
  uint32_t dtypes;               /* bit (1 << hal_plugin_dtype) per supported dtype */
  uint32_t ops;                  /* HAL_PLUGIN_OPS_* */
  double peak_f32_gflops;        /* stated peaks, 0 when unknown */
  double peak_bandwidth_gbps;
  double launch_latency_us;
  uint32_t kernel_formats; /* since 1.1: HAL_PLUGIN_KERNEL_* */
  /* Since 1.2: bytes of local (work-group shared) memory a launch may ask for through
   * HAL_PLUGIN_ARG_LOCAL_MEMORY arguments, all of them together; 0: none. */
  uint64_t local_memory_bytes;
} hal_plugin_device_properties;

/* A strided view of a buffer for the built-in ops: element offset, shape and strides in
 * elements, rank <= HAL_PLUGIN_MAX_RANK. Strides are 0 where an operand is broadcast.
 * struct_size since 1.2 (plugins of 1.0 and 1.1 get their header's struct, which lacks it). */
#define HAL_PLUGIN_MAX_RANK 8
typedef struct hal_plugin_tensor {
  size_t struct_size;
  hal_plugin_buffer buffer;
  uint64_t offset;
  hal_plugin_dtype dtype;
  uint32_t rank;
  int64_t shape[HAL_PLUGIN_MAX_RANK];
  int64_t strides[HAL_PLUGIN_MAX_RANK];
} hal_plugin_tensor;

/* Ops, numbered as in hal (src/ops). */
typedef int32_t hal_plugin_op;
#define HAL_PLUGIN_BINARY_ADD 0
#define HAL_PLUGIN_BINARY_SUB 1
#define HAL_PLUGIN_BINARY_MUL 2
#define HAL_PLUGIN_BINARY_DIV 3
#define HAL_PLUGIN_BINARY_MAXIMUM 4
#define HAL_PLUGIN_BINARY_MINIMUM 5
#define HAL_PLUGIN_UNARY_NEG 0
#define HAL_PLUGIN_UNARY_ABS 1
#define HAL_PLUGIN_UNARY_RELU 2
#define HAL_PLUGIN_UNARY_EXP 3
#define HAL_PLUGIN_UNARY_LOG 4
#define HAL_PLUGIN_UNARY_SQRT 5
#define HAL_PLUGIN_UNARY_RSQRT 6
#define HAL_PLUGIN_UNARY_TANH 7
#define HAL_PLUGIN_UNARY_SIGMOID 8
#define HAL_PLUGIN_UNARY_GELU 9
#define HAL_PLUGIN_UNARY_SILU 10
#define HAL_PLUGIN_REDUCE_SUM 0
#define HAL_PLUGIN_REDUCE_MEAN 1
#define HAL_PLUGIN_REDUCE_MAX 2
#define HAL_PLUGIN_REDUCE_MIN 3
#define HAL_PLUGIN_REDUCE_ARGMAX 4

/* C[m x n] = A[m x k] * B[k x n] for each of `batch` entries, row-major with leading
 * dimensions; a transposed operand's memory holds its k x m (or n x k) matrix. */
typedef struct hal_plugin_gemm {
  size_t struct_size;
  hal_plugin_dtype dtype;
  int64_t m, n, k, batch;
  hal_plugin_buffer a, b, c;
  uint64_t a_offset, b_offset, c_offset; /* elements */
  int64_t lda, ldb, ldc;
  int64_t a_batch_stride, b_batch_stride, c_batch_stride;
  int32_t a_transposed, b_transposed;
} hal_plugin_gemm;

typedef void (*hal_plugin_host_fn)(void* user_data);
/* Since 1.3: HAL_STATUS_OK to run, HAL_STATUS_DEVICE_LOST when the device was lost before the
 * callback began. Then hal lets go of what user_data holds and runs nothing of it, except its own
 * callbacks that find the loss themselves, which may call this API (not for this stream) as any
 * callback may. */
typedef void (*hal_plugin_host_status_fn)(void* user_data, hal_status status);

/* One kernel argument (since 1.1): a buffer at a byte offset, a scalar of `size` bytes, or
 * (since 1.2, on devices with local_memory_bytes) `size` bytes of local memory that the
 * launch's work-groups each get, uninitialised. struct_size since 1.2 (plugins of 1.1 get
 * their header's struct, which lacks it). In an array, an element is struct_size bytes after
 * the one before: step with hal_plugin_kernel_arg_at. */
#define HAL_PLUGIN_ARG_BUFFER 0
#define HAL_PLUGIN_ARG_SCALAR 1
#define HAL_PLUGIN_ARG_LOCAL_MEMORY 2
typedef struct hal_plugin_kernel_arg {
  size_t struct_size;
  int32_t kind;
  uint32_t size; /* scalar bytes, at most 8; local memory bytes */
  hal_plugin_buffer buffer;
  uint64_t offset;
  uint8_t value[8];
} hal_plugin_kernel_arg;

static inline const hal_plugin_kernel_arg* hal_plugin_kernel_arg_at(
    const hal_plugin_kernel_arg* args, uint32_t index) {
  return (const hal_plugin_kernel_arg*)((const char*)args + (size_t)index * args->struct_size);
}

/* The plugin's table. Entries up to and including event_elapsed_ms are required. */
typedef struct hal_plugin_api {
  size_t struct_size;
  uint32_t abi_major; /* what the plugin was built against */
  uint32_t abi_minor;
  const char* name;    /* the backend's name in device ids: [a-z][a-z0-9_]*, "sim" -> "sim:0" */
  const char* version; /* the plugin's own version, for humans */

  const char* (*last_error)(void);

  hal_status (*device_count)(uint32_t* count);
  hal_status (*device_get)(uint32_t index, hal_plugin_device* device);
  hal_status (*device_properties)(hal_plugin_device device,
                                  hal_plugin_device_properties* properties);
  hal_status (*device_memory_free)(hal_plugin_device device, uint64_t* bytes);

  /* Memory the host cannot address: only copies reach it. Zero bytes is INVALID_ARGUMENT;
   * more than the device can give is OUT_OF_MEMORY. */
  hal_status (*buffer_allocate)(hal_plugin_device device, uint64_t bytes,
                                hal_plugin_buffer* buffer);
  hal_status (*buffer_free)(hal_plugin_buffer buffer); /* no work may still use it */

  hal_status (*stream_create)(hal_plugin_device device, hal_plugin_stream* stream);
  hal_status (*stream_destroy)(hal_plugin_stream stream); /* after its work completes */
  hal_status (*stream_synchronize)(hal_plugin_stream stream);
  hal_status (*stream_query)(hal_plugin_stream stream, int32_t* idle);
  /* Copies, in order with the stream's other work. `src` (to device) and `dst` (to host) are
   * hal's host memory, valid until the copy completes. */
  hal_status (*copy_to_device)(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                               const void* src, uint64_t bytes);
  hal_status (*copy_to_host)(hal_plugin_stream stream, void* dst, hal_plugin_buffer src,
                             uint64_t src_offset, uint64_t bytes);
  /* Between two buffers of the stream's device. (Before 1.2, possibly of two devices: hal
   * still passes such pairs to plugins of 1.0 and 1.1, and uses copy_peer for later ones.) */
  hal_status (*copy_on_device)(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                               hal_plugin_buffer src, uint64_t src_offset, uint64_t bytes);
  /* `pattern` (1, 2, 4 or 8 bytes) repeated over `bytes`, a multiple of its size. */
  hal_status (*fill)(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                     uint64_t bytes, const void* pattern, uint32_t pattern_size);
  /* Calls fn(user_data) on some thread once the work before it has completed; later work
   * waits for it to return. fn may call this API, but not for this stream. */
  hal_status (*host_callback)(hal_plugin_stream stream, hal_plugin_host_fn fn, void* user_data);

  hal_status (*event_create)(hal_plugin_device device, hal_plugin_event* event);
  hal_status (*event_destroy)(hal_plugin_event event);
  hal_status (*event_record)(hal_plugin_event event, hal_plugin_stream stream);
  hal_status (*stream_wait_event)(hal_plugin_stream stream, hal_plugin_event event);
  hal_status (*event_synchronize)(hal_plugin_event event);
  hal_status (*event_query)(hal_plugin_event event, int32_t* complete);
  /* Milliseconds between two completed records of events of one device. */
  hal_status (*event_elapsed_ms)(hal_plugin_event start, hal_plugin_event end, double* ms);

  /* Optional: built-in ops on devices whose properties declare them. `out` is contiguous with
   * out.shape; a and b are broadcast to it (binary), x has out's shape (unary). Reduce folds
   * the dimensions of x whose bit is set in `axes` (bit d for dimension d), out holding the
   * others in order (argmax: i64 positions, row-major over the reduced dimensions). */
  hal_status (*op_binary)(hal_plugin_stream stream, hal_plugin_op op, const hal_plugin_tensor* out,
                          const hal_plugin_tensor* a, const hal_plugin_tensor* b);
  hal_status (*op_unary)(hal_plugin_stream stream, hal_plugin_op op, const hal_plugin_tensor* out,
                         const hal_plugin_tensor* x);
  hal_status (*op_reduce)(hal_plugin_stream stream, hal_plugin_op op, const hal_plugin_tensor* out,
                          const hal_plugin_tensor* x, uint32_t axes);
  hal_status (*op_matmul)(hal_plugin_stream stream, const hal_plugin_gemm* gemm);

  /* Since 1.1, optional: kernels of the formats a device declares. `options` holds -D defines
   * and flags, space-separated. A source that does not compile is COMPILE_FAILED, with the
   * build log as the message. */
  hal_status (*kernel_compile)(hal_plugin_device device, uint32_t format, const char* source,
                               size_t source_size, const char* entry, const char* options,
                               hal_plugin_kernel* kernel);
  hal_status (*kernel_destroy)(hal_plugin_kernel kernel); /* after the launches that use it */
  /* `global` counts work-items per dimension; `local` is the work-group (0s: the plugin's
   * choice). Arguments are read during the call. */
  hal_status (*kernel_launch)(hal_plugin_stream stream, hal_plugin_kernel kernel,
                              const uint64_t global[3], const uint32_t local[3],
                              const hal_plugin_kernel_arg* args, uint32_t arg_count);

  /* Since 1.2, optional: pinned host memory. A buffer like buffer_allocate's, freed with
   * buffer_free and used in copies, ops and launches of the device's streams, whose bytes the
   * host also reads and writes at `host` (after synchronising with the work that uses them).
   * It is host memory: it does not count against device_memory_free. */
  hal_status (*host_buffer_allocate)(hal_plugin_device device, uint64_t bytes,
                                     hal_plugin_buffer* buffer, void** host);
  /* Since 1.2, optional: a copy between buffers of two different devices of this plugin, one
   * of them the stream's, without the host, in order with the stream's work. UNSUPPORTED for
   * a pair of devices that cannot reach each other: hal then stages through host memory.
   * Ordering with the other device's work is hal's (with events). */
  hal_status (*copy_peer)(hal_plugin_stream stream, hal_plugin_buffer dst, uint64_t dst_offset,
                          hal_plugin_buffer src, uint64_t src_offset, uint64_t bytes);
  /* Since 1.3, optional: host_callback whose fn is told whether the device was lost before it
   * began (then it is still called, at the same point of the stream, with DEVICE_LOST).
   * hal uses it in place of host_callback; with it, a call that finds the device lost need not
   * wait for a callback already running (the lost-device rules at the top of this file). */
  hal_status (*host_callback_status)(hal_plugin_stream stream, hal_plugin_host_status_fn fn,
                                     void* user_data);
} hal_plugin_api;

/* The entry point. Returns ABI_MISMATCH (with a message) for a host of another major version.
 * On any failure *api is left NULL or set to a table whose last_error hal may call for the
 * message. Once init has been called, hal never unloads the library (a failed init too): what
 * init started (threads, thread-local destructors) may go on running. A C++ exception that
 * escapes init is the plugin's bug; hal reports the plugin not loaded and goes on. */
typedef hal_status (*hal_plugin_init_fn)(const hal_plugin_host_info* host,
                                         const hal_plugin_api** api);

#ifdef __cplusplus
}
#endif

#endif /* HAL_PLUGIN_H_ */
