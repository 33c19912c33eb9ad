// Who implements which op: every kernel of hal's ops registered per device kind x op x dtype.
// The defaults are the CPU's host kernels, the portable kernels that OpenCL and CUDA compile,
// and a plugin's built-in ops; a backend's vendor library outranks them for the ops it does
// better (matrix products: OpenBLAS, CLBlast, cuBLAS). Adding a kernel is one entry here.
#include <array>
#include <vector>

#include "ops/builtin_ops.hpp"
#include "ops/gemm_choice.hpp"
#include "ops/nn_kernels.hpp"
#include "ops/op_kernels.hpp"
#ifdef HAL_HAVE_VULKAN
#include "ops/vulkan_kernels.hpp"
#endif

namespace hal::ops {
namespace {

using namespace dtypes;

bool host_device(const DeviceInfo& device) { return device.has_feature(feature::kHostKernels); }
bool portable_device(const DeviceInfo& device) {
  return device.has_feature(feature::kPortableKernels);
}
bool builtin_binary_device(const DeviceInfo& device) {
  return device.has_feature(feature::kBuiltinBinary);
}
bool builtin_unary_device(const DeviceInfo& device) {
  return device.has_feature(feature::kBuiltinUnary);
}
bool builtin_reduce_device(const DeviceInfo& device) {
  return device.has_feature(feature::kBuiltinReduce);
}
bool builtin_matmul_device(const DeviceInfo& device) {
  return device.has_feature(feature::kBuiltinMatmul);
}
bool cpu_backend(const DeviceInfo& device) { return device.backend() == "cpu"; }
bool any_device(const DeviceInfo&) { return true; }
bool opencl_backend(const DeviceInfo& device) { return device.backend() == "opencl"; }
bool cuda_backend(const DeviceInfo& device) { return device.backend() == "cuda"; }
#ifdef HAL_HAVE_VULKAN
bool vulkan_backend(const DeviceInfo& device) { return device.backend() == "vulkan"; }
#endif

// f64 only where the device has it.
bool fp64_if_listed(DType dtype, const DeviceInfo& device) {
  return dtype != DType::f64 || device.has_feature(feature::kFp64);
}
// f16 or bf16 arithmetic where the device has it (a GPU's fp16 and bf16 features).
bool half_arithmetic(DType dtype, const DeviceInfo& device) {
  return device.has_feature(dtype == DType::bf16 ? feature::kBf16 : feature::kFp16);
}
// A plugin's built-in ops take the dtypes its device lists.
bool listed(DType dtype, const DeviceInfo& device) { return device.supports(dtype); }
// Plugins' built-in means divide in floating point (plugin.h).
bool listed_floating(DType dtype, const DeviceInfo& device) {
  return kFloat.has(dtype) && device.supports(dtype);
}

// The family's kernels, adapted to one signature where the family's own takes fewer arguments.
void host_reduce_kernel(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                        const std::vector<bool>&, Stream& stream) {
  host_reduce(op, x, out, layout, stream);
}
void portable_reduce_kernel(Reduce op, const Tensor& x, const Tensor& out,
                            const ReduceLayout& layout, const std::vector<bool>&, Stream& stream) {
  portable_reduce(op, x, out, layout, stream);
}
void builtin_binary_kernel(Binary op, const Tensor& a, const Tensor& b, const Tensor& out,
                           const ElementwiseLayout<2>&, Stream& stream) {
  builtin_binary(op, a, b, out, stream);
}
void builtin_unary_kernel(Unary op, const Tensor& x, const Tensor& out, const ElementwiseLayout<1>&,
                          Stream& stream) {
  builtin_unary(op, x, out, stream);
}
void builtin_reduce_kernel(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout&,
                           const std::vector<bool>& reduced_axes, Stream& stream) {
  builtin_reduce(op, x, reduced_axes, out, stream);
}
// The stream's backend multiplies (StreamImpl::gemm).
void backend_gemm(const GemmDesc& gemm, Stream& stream) { stream.impl()->gemm(gemm); }
// The stream's backend convolves (StreamImpl::convolution).
void backend_conv(const ConvDesc& conv, Stream& stream) { stream.impl()->convolution(conv); }
#if HAL_HAVE_ONEDNN
constexpr bool kOneDnn = true;
#else
constexpr bool kOneDnn = false;
#endif
bool onednn_device(const DeviceInfo& device) { return kOneDnn && cpu_backend(device); }

constexpr DTypeSet kKernelArithmetic = kFloat | kInteger;
// Composite ops the CPU computes with one fused kernel each (host_rowwise.cpp).
constexpr std::array<std::string_view, 4> kRowwise{"softmax", "log_softmax", "layer_norm",
                                                   "rms_norm"};
constexpr DTypeSet kKernelComparable = kFloat | kInteger | DTypeSet{DType::boolean};
constexpr int kVendorLibrary = 10;

constexpr std::array<std::string_view, 6> kArithmetic{"add", "sub",     "mul",
                                                      "div", "maximum", "minimum"};
constexpr std::array<std::string_view, 6> kComparisons{"eq", "ne", "lt", "le", "gt", "ge"};
constexpr std::array<std::string_view, 3> kSignedFunctions{"neg", "abs", "relu"};
// The functions plugin.h numbers (a plugin may run them as built-in ops), and the ones only
// host and portable kernels run.
constexpr std::array<std::string_view, 8> kFloatFunctions{"exp",  "log",     "sqrt", "rsqrt",
                                                          "tanh", "sigmoid", "gelu", "silu"};
constexpr std::array<std::string_view, 15> kKernelFloatFunctions{
    "erf",  "floor", "ceil", "round", "sin",   "cos",   "tan",  "asin",
    "acos", "atan",  "sinh", "cosh",  "asinh", "acosh", "atanh"};
constexpr std::array<std::string_view, 3> kExtremes{"max", "min", "argmax"};

class Registry {
 public:
  Registry() : by_op_(op_descriptors().size()) {
    // The CPU's host kernels; arithmetic and element functions of f16 and bf16 widen to f32
    // in registers (ops/simd) instead of casting whole tensors there and back.
    add(kArithmetic,
        {"host kernels", host_device, kKernelArithmetic | kHalf, nullptr, 0, &host_binary});
    add(kComparisons, {"host kernels", host_device, kKernelComparable, nullptr, 0, &host_binary});
    add({"pow"}, {"host kernels", host_device, kFloat, nullptr, 0, &host_binary});
    add(kSignedFunctions,
        {"host kernels", host_device, kKernelArithmetic | kHalf, nullptr, 0, &host_unary});
    add(kFloatFunctions, {"host kernels", host_device, kFloating, nullptr, 0, &host_unary});
    add(kKernelFloatFunctions, {"host kernels", host_device, kFloating, nullptr, 0, &host_unary});
    add({"where"}, {"host kernels", host_device, kAll, nullptr, 0, &host_where});
    add({"cast"}, {"host kernels", host_device, kAll, nullptr, 0, &host_cast});
    add({"sum"}, {"host kernels", host_device, kFloat | DTypeSet{DType::i64, DType::u64}, nullptr,
                  0, &host_reduce_kernel});
    add({"mean"}, {"host kernels", host_device, kFloat, nullptr, 0, &host_reduce_kernel});
    add(kExtremes,
        {"host kernels", host_device, kKernelArithmetic, nullptr, 0, &host_reduce_kernel});

    add(kRowwise, {"host kernels", host_device, kFloat, nullptr, 0, &host_rowwise});
    add({"layer_norm_backward", "rms_norm_backward"},
        {"host kernels", host_device, kFloat, nullptr, 0, &host_norm_backward});
    add({"fused_elementwise"}, {"host kernels", host_device, kFloat, nullptr, 0, &host_fused});

    // Portable kernels, compiled by OpenCL and CUDA devices.
    add(kArithmetic, {"portable kernels", portable_device, kKernelArithmetic, fp64_if_listed, 0,
                      &portable_binary});
    add(kComparisons, {"portable kernels", portable_device, kKernelComparable, fp64_if_listed, 0,
                       &portable_binary});
    add({"pow"},
        {"portable kernels", portable_device, kFloat, fp64_if_listed, 0, &portable_binary});
    add(kSignedFunctions, {"portable kernels", portable_device, kKernelArithmetic, fp64_if_listed,
                           0, &portable_unary});
    add(kFloatFunctions,
        {"portable kernels", portable_device, kFloat, fp64_if_listed, 0, &portable_unary});
    add(kKernelFloatFunctions,
        {"portable kernels", portable_device, kFloat, fp64_if_listed, 0, &portable_unary});
    add({"where"}, {"portable kernels", portable_device, kAll, fp64_if_listed, 0, &portable_where});
    add({"fused_elementwise"},
        {"portable kernels", portable_device, kFloat, fp64_if_listed, 0, &portable_fused});
    add({"cast"}, {"portable kernels", portable_device, kAll, fp64_if_listed, 0, &portable_cast});
    add({"sum"}, {"portable kernels", portable_device, kFloat | DTypeSet{DType::i64, DType::u64},
                  fp64_if_listed, 0, &portable_reduce_kernel});
    add({"mean"},
        {"portable kernels", portable_device, kFloat, fp64_if_listed, 0, &portable_reduce_kernel});
    add(kExtremes, {"portable kernels", portable_device, kKernelArithmetic, fp64_if_listed, 0,
                    &portable_reduce_kernel});
    add(kRowwise,
        {"portable kernels", portable_device, kFloat, fp64_if_listed, 0, &portable_rowwise});
    add({"layer_norm_backward", "rms_norm_backward"},
        {"portable kernels", portable_device, kFloat, fp64_if_listed, 0, &portable_norm_backward});

    // A plugin's built-in ops (plugin.h): arithmetic but pow, unary functions, reductions.
    add(kArithmetic,
        {"plugin built-in", builtin_binary_device, kAll, listed, 0, &builtin_binary_kernel});
    add(kSignedFunctions,
        {"plugin built-in", builtin_unary_device, kAll, listed, 0, &builtin_unary_kernel});
    add(kFloatFunctions,
        {"plugin built-in", builtin_unary_device, kFloating, listed, 0, &builtin_unary_kernel});
    add({"sum"}, {"plugin built-in", builtin_reduce_device, kFloating | DTypeSet{DType::i64},
                  listed, 0, &builtin_reduce_kernel});
    add({"mean"}, {"plugin built-in", builtin_reduce_device, kFloat, listed_floating, 0,
                   &builtin_reduce_kernel});
    add(kExtremes,
        {"plugin built-in", builtin_reduce_device, kNumeric, listed, 0, &builtin_reduce_kernel});

#ifdef HAL_HAVE_VULKAN
    // Vulkan's shaders (kernels/vulkan): f32, with f16, f64, integers and bool where the device
    // holds them (its dtypes: shaderFloat16, shaderFloat64, ...); other dtypes are refused with
    // the reason (docs/vulkan.md). GLSL has no f64 transcendental functions: unary.comp has
    // exp and log of its own.
    constexpr DTypeSet kVulkanHalf{DType::f32, DType::f16};
    constexpr DTypeSet kVulkanFloating{DType::f32, DType::f16, DType::f64};
    constexpr DTypeSet kVulkanNumbers = kVulkanFloating | kInteger;
    constexpr DTypeSet kVulkanCompared = kVulkanNumbers | DTypeSet{DType::boolean};
    constexpr DTypeSet kVulkanWhere = kVulkanCompared;
    constexpr std::array<std::string_view, 7> kVulkanF64Functions{"exp",   "log",  "sqrt", "rsqrt",
                                                                  "floor", "ceil", "round"};
    add(kArithmetic, {"Vulkan shaders", vulkan_backend, kVulkanNumbers, listed, 0, &vulkan_binary});
    add(kComparisons,
        {"Vulkan shaders", vulkan_backend, kVulkanCompared, listed, 0, &vulkan_binary});
    add({"pow"}, {"Vulkan shaders", vulkan_backend, kVulkanHalf, listed, 0, &vulkan_binary});
    add(kSignedFunctions,
        {"Vulkan shaders", vulkan_backend, kVulkanNumbers, listed, 0, &vulkan_unary});
    add({"where"}, {"Vulkan shaders", vulkan_backend, kVulkanWhere, listed, 0, &vulkan_where});
    add({"cast"}, {"Vulkan shaders", vulkan_backend, kVulkanWhere, listed, 0, &vulkan_cast});
    add({"embedding"},
        {"Vulkan shaders", vulkan_backend, kVulkanFloating, listed, 0, &vulkan_embedding});
    add({"embedding_backward"},
        {"Vulkan shaders", vulkan_backend, kFloat, listed, 0, &vulkan_embedding_backward});
    add(kFloatFunctions, {"Vulkan shaders", vulkan_backend, kVulkanHalf, listed, 0, &vulkan_unary});
    add(kKernelFloatFunctions,
        {"Vulkan shaders", vulkan_backend, kVulkanHalf, listed, 0, &vulkan_unary});
    add(kVulkanF64Functions,
        {"Vulkan shaders", vulkan_backend, DTypeSet{DType::f64}, listed, 0, &vulkan_unary});
    add({"sum"}, {"Vulkan shaders", vulkan_backend,
                  kVulkanFloating | DTypeSet{DType::i64, DType::u64}, listed, 0, &vulkan_reduce});
    add({"mean"}, {"Vulkan shaders", vulkan_backend, kVulkanFloating, listed, 0, &vulkan_reduce});
    add(kExtremes, {"Vulkan shaders", vulkan_backend, kVulkanNumbers, listed, 0, &vulkan_reduce});
    add(kRowwise, {"Vulkan shaders", vulkan_backend, kVulkanHalf, listed, 0, &vulkan_rowwise});
    add({"layer_norm_backward", "rms_norm_backward"},
        {"Vulkan shaders", vulkan_backend, DTypeSet{DType::f32}, listed, 0, &vulkan_norm_backward});
    add({"matmul"}, {"Vulkan shaders", vulkan_backend, kVulkanFloating, listed, 0, &vulkan_gemm});
    add({"conv"}, {"Vulkan shaders", vulkan_backend, kVulkanFloating, listed, 0, &vulkan_conv});
#endif

    // Matrix products: each backend's BLAS; on OpenCL and CUDA, per shape the BLAS or hal's
    // own GEMM, whichever hal tune measured faster (ops/gemm_choice.hpp).
    add({"matmul"}, {"OpenBLAS", cpu_backend, kFloat, nullptr, kVendorLibrary, &backend_gemm});
    // bf16 and f16 in one pass with f32 accumulation (cpu_matmul_half.cpp).
    add({"matmul"}, {"oneDNN", onednn_device, kHalf, nullptr, kVendorLibrary, &backend_gemm});
    add({"matmul"}, {"CLBlast or hal GEMM (tuned)", opencl_backend, kFloat, fp64_if_listed,
                     kVendorLibrary, &chosen_gemm});
    add({"matmul"}, {"cuBLAS or hal GEMM (tuned)", cuda_backend, kFloat, fp64_if_listed,
                     kVendorLibrary, &chosen_gemm});
    // f16 and bf16 on the tensor cores, f32 accumulation, one pass (no cast kernels).
    add({"matmul"}, {"cuBLAS (tensor cores)", cuda_backend, kHalf, half_arithmetic, kVendorLibrary,
                     &backend_gemm});
    add({"matmul"}, {"plugin built-in", builtin_matmul_device, kFloat, listed, 0, &backend_gemm});

    // Convolutions: oneDNN on the CPU, Vulkan's shaders above (elsewhere built from concat and
    // matmul). The transposed ones: oneDNN's deconvolution (elsewhere a conv per phase); the
    // kernel is told by ConvDesc::transposed, which only this op's implementations are given.
    add({"conv"},
        {"oneDNN", onednn_device, DTypeSet{DType::f32}, nullptr, kVendorLibrary, &backend_conv});
    add({"conv_transpose"},
        {"oneDNN", onednn_device, DTypeSet{DType::f32}, nullptr, kVendorLibrary, &backend_conv});

    // The layers (docs/training.md): the CPU's host kernels; other devices build them from their
    // parts, but concat, which every device runs by device copies.
    add({"concat"}, {"host kernels", host_device, kAll, nullptr, 0, &host_concat});
    add({"concat"}, {"device copies", any_device, kAll, nullptr, -1, &copied_concat});
    add({"embedding"}, {"host kernels", host_device, kFloating, nullptr, 0, &host_embedding});
    // Rows gathered: the parts' one-hot product took memory for [indices, rows] and made every
    // row NaN where the table held an infinity or NaN anywhere (0 * inf).
    add({"embedding"},
        {"portable kernels", portable_device, kFloating, fp64_if_listed, 0, &portable_embedding});
    add({"embedding_backward"},
        {"host kernels", host_device, kFloat, nullptr, 0, &host_embedding_backward});
    // Rows added along chains of equal indices (kernels/ops/embedding.kernel): the one-hot
    // product took n x rows memory, and an infinity in one gradient row made others NaN.
    add({"embedding_backward"}, {"portable kernels", portable_device, kFloat, fp64_if_listed, 0,
                                 &portable_embedding_backward});
    add({"cross_entropy"}, {"host kernels", host_device, kFloat, nullptr, 0, &host_cross_entropy});
    add({"cross_entropy_backward"},
        {"host kernels", host_device, kFloat, nullptr, 0, &host_cross_entropy_backward});
    add({"dropout"}, {"host kernels", host_device, kFloat, nullptr, 0, &host_dropout});
    add({"max_pool", "avg_pool"}, {"host kernels", host_device, kFloat, nullptr, 0, &host_pool});
  }

  std::span<const OpImplementation> of(const OpDescriptor& op) const {
    return by_op_[static_cast<size_t>(&op - op_descriptors().data())];
  }

 private:
  void add(std::span<const std::string_view> ops, const OpImplementation& implementation) {
    for (std::string_view op : ops)
      by_op_[static_cast<size_t>(&descriptor(op) - op_descriptors().data())].push_back(
          implementation);
  }
  void add(std::initializer_list<std::string_view> ops, const OpImplementation& implementation) {
    add(std::span<const std::string_view>(ops.begin(), ops.size()), implementation);
  }

  std::vector<std::vector<OpImplementation>> by_op_;
};

}  // namespace

std::span<const OpImplementation> implementations_of(const OpDescriptor& op) {
  static const Registry registry;
  return registry.of(op);
}

}  // namespace hal::ops
