// The simulated device's kernels, in its native format: a source lists the built-in kernels it
// uses, one "kernel NAME" line each, and -DSCALE=<number> sets scale_f32's factor. Built-in:
//   saxpy(float a, buffer x, buffer y, uint n)   y[i] = a * x[i] + y[i], i < n
//   iota_u32(buffer out, uint start)             out[i] = start + i over the global size
//   scale_f32(buffer data)                       data[i] *= SCALE
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
};

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
    if (!find(name))
      return fail(HAL_STATUS_COMPILE_FAILED, "line " + std::to_string(number) + ": no kernel '" +
                                                 name + "'; sim has saxpy, iota_u32, scale_f32");
    listed = listed || name == entry;
  }
  if (!listed) return fail(HAL_STATUS_COMPILE_FAILED, "the source lists no kernel '" + entry + "'");
  float scale = 1.0f;
  const size_t define = options.find("-DSCALE=");
  if (define != std::string::npos) scale = std::strtof(options.c_str() + define + 8, nullptr);
  *out = new hal_plugin_kernel_s{entry, scale};
  return HAL_STATUS_OK;
}

hal_status check_launch(const hal_plugin_kernel_s& kernel, const hal_plugin_kernel_arg* args,
                        uint32_t count) {
  const Signature& signature = *find(kernel.entry);
  if (count != signature.kinds.size())
    return fail(HAL_STATUS_INVALID_ARGUMENT, "sim: kernel '" + kernel.entry + "' takes " +
                                                 std::to_string(signature.kinds.size()) +
                                                 " arguments, not " + std::to_string(count));
  for (uint32_t i = 0; i < count; ++i)
    if (args[i].kind != signature.kinds[i])
      return fail(HAL_STATUS_INVALID_ARGUMENT,
                  "sim: argument " + std::to_string(i) + " of kernel '" + kernel.entry +
                      "' must be a " +
                      (signature.kinds[i] == HAL_PLUGIN_ARG_BUFFER ? "buffer" : "scalar"));
  return HAL_STATUS_OK;
}

void run_kernel(const hal_plugin_kernel_s& kernel, uint64_t items,
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
  } else {
    float* data = pointer<float>(args[0]);
    for (uint64_t i = 0; i < items; ++i) data[i] *= kernel.scale;
  }
}

}  // namespace sim
