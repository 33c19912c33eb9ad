// The simulated device's kernels, in its native format: a source lists the built-in kernels it
// uses, one "kernel NAME" line each, and -DSCALE=<number> sets scale_f32's factor. Built-in:
//   saxpy(float a, buffer x, buffer y, uint n)   y[i] = a * x[i] + y[i], i < n
//   iota_u32(buffer out, uint start)             out[i] = start + i over the global size
//   scale_f32(buffer data)                       data[i] *= SCALE
//   group_sum_f32(buffer in, buffer out, local scratch, uint n)   (plugin.h 1.2)
//       out[g] = the sum of in[i], i < n, over work-group g's items, added up in `scratch`
//       (local memory of at least 4 bytes per item of a group)
#include <algorithm>
#include <cstring>
#include <sstream>

#include "sim.hpp"

namespace sim {
namespace {

struct Signature {
  const char* name;
  std::vector<int32_t> kinds;  // HAL_PLUGIN_ARG_*
};

const Signature kKernels[] = {
    {"saxpy",
     {HAL_PLUGIN_ARG_SCALAR, HAL_PLUGIN_ARG_BUFFER, HAL_PLUGIN_ARG_BUFFER, HAL_PLUGIN_ARG_SCALAR}},
    {"iota_u32", {HAL_PLUGIN_ARG_BUFFER, HAL_PLUGIN_ARG_SCALAR}},
    {"scale_f32", {HAL_PLUGIN_ARG_BUFFER}},
#ifndef HAL_SIM_ABI_1_1
    {"group_sum_f32",
     {HAL_PLUGIN_ARG_BUFFER, HAL_PLUGIN_ARG_BUFFER, HAL_PLUGIN_ARG_LOCAL_MEMORY,
      HAL_PLUGIN_ARG_SCALAR}},
#endif
};

const char* kind_name(int32_t kind) {
  switch (kind) {
    case HAL_PLUGIN_ARG_BUFFER:
      return "buffer";
    case HAL_PLUGIN_ARG_SCALAR:
      return "scalar";
    default:
      return "local memory";
  }
}

// Each work-group adds its items up in local memory, halving the active items each step.
void group_sum(const float* in, float* out, uint64_t n, uint64_t items, uint64_t group,
               uint64_t local_bytes) {
  std::vector<unsigned char> local(local_bytes);  // one group's at a time
  auto* scratch = reinterpret_cast<float*>(local.data());
  for (uint64_t g = 0; g * group < items; ++g) {
    for (uint64_t i = 0; i < group; ++i) {
      const uint64_t at = g * group + i;
      scratch[i] = at < n ? in[at] : 0.0f;
    }
    for (uint64_t half = (group + 1) / 2, active = group; active > 1;
         active = half, half = (half + 1) / 2)
      for (uint64_t i = 0; i + half < active; ++i) scratch[i] += scratch[i + half];
    out[g] = scratch[0];
  }
}

const Signature* find(const std::string& name) {
  for (const Signature& signature : kKernels)
    if (name == signature.name) return &signature;
  return nullptr;
}

template <class T>
T scalar(const hal_plugin_kernel_arg& arg) {
  T value{};
  std::memcpy(&value, arg.value, std::min<size_t>(sizeof value, arg.size));
  return value;
}

template <class T>
T* pointer(const hal_plugin_kernel_arg& arg) {
  return reinterpret_cast<T*>(arg.buffer->bytes.get() + arg.offset);
}

// The 4-byte elements from its offset that a launch of `items` work-items in groups of `group`
// reads or writes of buffer argument `index`, as run_kernel runs the kernel.
uint64_t reached(const hal_plugin_kernel_s& kernel, size_t index,
                 const std::vector<hal_plugin_kernel_arg>& args, uint64_t items, uint64_t group) {
  if (kernel.entry == "saxpy") return std::min<uint64_t>(items, scalar<uint32_t>(args[3]));
  if (kernel.entry == "group_sum_f32") {
    const uint64_t groups = items / group + (items % group != 0);
    if (index == 1) return groups;  // out: a sum per group
    // in: below n, over whole groups (the last one may pass `items`); below 2^33, no overflow.
    const uint64_t n = scalar<uint32_t>(args[3]);
    return items >= n ? n : std::min(n, groups * group);
  }
  return items;  // iota_u32, scale_f32: an element per item
}

}  // namespace

hal_status compile_kernel(uint32_t format, const std::string& source, const std::string& entry,
                          const std::string& options, hal_plugin_kernel* out) {
  if (format != HAL_PLUGIN_KERNEL_NATIVE)
    return fail(HAL_STATUS_UNSUPPORTED, "sim compiles its native format only");
  std::istringstream lines(source);
  std::string line;
  bool listed = false;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream words(line);
    std::string keyword, name, rest;
    if (!(words >> keyword)) continue;  // a blank line
    if (keyword != "kernel" || !(words >> name) || (words >> rest))
      return fail(HAL_STATUS_COMPILE_FAILED, "line " + std::to_string(number) +
                                                 ": expected 'kernel NAME', got '" + line + "'");
    if (!find(name)) {
      std::string names;
      for (const Signature& signature : kKernels)
        names += (names.empty() ? "" : ", ") + std::string(signature.name);
      return fail(HAL_STATUS_COMPILE_FAILED, "line " + std::to_string(number) + ": no kernel '" +
                                                 name + "'; sim has " + names);
    }
    listed = listed || name == entry;
  }
  if (!listed) return fail(HAL_STATUS_COMPILE_FAILED, "the source lists no kernel '" + entry + "'");
  float scale = 1.0f;
  const size_t define = options.find("-DSCALE=");
  if (define != std::string::npos) scale = std::strtof(options.c_str() + define + 8, nullptr);
  *out = new hal_plugin_kernel_s{entry, scale};
  return HAL_STATUS_OK;
}

hal_status read_args(const hal_plugin_kernel_arg* args, uint32_t count,
                     std::vector<hal_plugin_kernel_arg>& out) {
  out.clear();
  for (uint32_t i = 0; i < count; ++i) {
#ifdef HAL_SIM_ABI_1_1
    out.push_back(args[i]);
#else
    if (args->struct_size < sizeof(hal_plugin_kernel_arg))
      return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: kernel arguments of " +
                                                   std::to_string(args->struct_size) +
                                                   " bytes, fewer than plugin.h 1.2's");
    out.push_back(*hal_plugin_kernel_arg_at(args, i));
#endif
  }
  return HAL_STATUS_OK;
}

hal_status check_launch(const hal_plugin_kernel_s& kernel,
                        const std::vector<hal_plugin_kernel_arg>& args, uint64_t items,
                        uint64_t group) {
  const Signature& signature = *find(kernel.entry);
  const size_t count = args.size();
  if (count != signature.kinds.size())
    return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: kernel '" + kernel.entry + "' takes " +
                                                 std::to_string(signature.kinds.size()) +
                                                 " arguments, not " + std::to_string(count));
  uint64_t local_bytes = 0;
  bool local = false;  // a kernel that takes local memory uses 4 bytes per item, 0 given or not
  for (size_t i = 0; i < count; ++i) {
    if (args[i].kind != signature.kinds[i])
      return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: argument " + std::to_string(i) +
                                                   " of kernel '" + kernel.entry + "' must be " +
                                                   kind_name(signature.kinds[i]));
    if (args[i].kind != HAL_PLUGIN_ARG_BUFFER && args[i].kind != HAL_PLUGIN_ARG_SCALAR) {
      local = true;
      local_bytes += args[i].size;
    }
  }
  if (local && local_bytes < 4 * group)
    return fail(HAL_STATUS_INVALID_ARGUMENT,
                "sim: kernel '" + kernel.entry + "' needs 4 bytes of local memory per item of a " +
                    std::to_string(group) + "-item work-group, not " + std::to_string(local_bytes));
  // A kernel does not know its buffers' sizes: refused here, it would write past them. Its
  // elements are 4-byte words, read as such: an offset between two is refused too (a device
  // faults on such an access; the host's would be undefined behaviour).
  for (size_t i = 0; i < count; ++i) {
    const hal_plugin_kernel_arg& arg = args[i];
    if (arg.kind != HAL_PLUGIN_ARG_BUFFER) continue;
    if (arg.offset % 4 != 0)
      return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: kernel '" + kernel.entry + "': argument " +
                                                   std::to_string(i) + " is at byte offset " +
                                                   std::to_string(arg.offset) +
                                                   ", not a multiple of its elements' 4 bytes");
    const uint64_t elements = reached(kernel, i, args, items, group);
    const uint64_t size = arg.buffer ? arg.buffer->size : 0;
    uint64_t bytes = 0;
    if (arg.buffer && !__builtin_mul_overflow(elements, uint64_t{4}, &bytes) &&
        arg.offset <= size && bytes <= size - arg.offset)
      continue;
    return fail(HAL_STATUS_INVALID_ARGUMENT,
                "sim: kernel '" + kernel.entry + "': argument " + std::to_string(i) + " (" +
                    std::to_string(elements) + " elements of 4 bytes at byte offset " +
                    std::to_string(arg.offset) + ") reaches outside its buffer of " +
                    std::to_string(size) + " bytes");
  }
  return HAL_STATUS_OK;
}

void run_kernel(const hal_plugin_kernel_s& kernel, uint64_t items, uint64_t group,
                const std::vector<hal_plugin_kernel_arg>& args) {
  if (kernel.entry == "saxpy") {
    const float a = scalar<float>(args[0]);
    const float* x = pointer<float>(args[1]);
    float* y = pointer<float>(args[2]);
    const uint64_t n = std::min<uint64_t>(items, scalar<uint32_t>(args[3]));
    for (uint64_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
  } else if (kernel.entry == "iota_u32") {
    uint32_t* out = pointer<uint32_t>(args[0]);
    const uint32_t start = scalar<uint32_t>(args[1]);
    for (uint64_t i = 0; i < items; ++i) out[i] = start + static_cast<uint32_t>(i);
  } else if (kernel.entry == "group_sum_f32") {
    group_sum(pointer<float>(args[0]), pointer<float>(args[1]), scalar<uint32_t>(args[3]), items,
              group, args[2].size);
  } else {
    float* data = pointer<float>(args[0]);
    for (uint64_t i = 0; i < items; ++i) data[i] *= kernel.scale;
  }
}

}  // namespace sim
