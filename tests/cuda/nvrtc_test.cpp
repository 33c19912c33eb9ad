// NVRTC and the portable dialect's CUDA prelude: these need the CUDA toolkit, not a GPU, so
// they run wherever hal was built with CUDA.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/cuda/cuda_kernel.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "core/embedded_kernels.hpp"
#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "ops/portable_defines.hpp"

namespace hal::cuda {
namespace {

std::shared_ptr<const Nvrtc> nvrtc_or_skip() {
  try {
    return Nvrtc::load();
  } catch (const Error& error) {
    return nullptr;
  }
}

#define REQUIRE_NVRTC(nvrtc)                                                  \
  auto nvrtc = nvrtc_or_skip();                                               \
  if (!nvrtc)                                                                 \
  GTEST_SKIP() << "NVRTC cannot be opened here (libnvrtc.so.13 or .12); the " \
                  "CUDA toolkit's NVRTC is needed to compile CUDA kernels"

bool is_elf(const std::string& image) {
  return image.rfind(
             "\x7f"
             "ELF",
             0) == 0;
}

// The kernels below are the portable ones the OpenCL tests run, unchanged.
const char* const kSaxpy = R"(
KERNEL void saxpy(float a, GLOBAL const float* x, GLOBAL float* y, uint n) {
  size_t i = global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

const char* const kTiledTranspose = R"(
#ifndef TILE
#error TILE must be defined
#endif
DEVICE_FN size_t at(size_t row, size_t col, size_t cols) { return row * cols + col; }
KERNEL void transpose(GLOBAL const float* in, GLOBAL float* out, uint rows, uint cols) {
  SHARED float tile[TILE][TILE + 1];
  size_t col = global_id(0), row = global_id(1);
  if (row < rows && col < cols) tile[local_id(1)][local_id(0)] = in[at(row, col, cols)];
  barrier();
  size_t out_col = group_id(1) * TILE + local_id(0), out_row = group_id(0) * TILE + local_id(1);
  if (out_row < cols && out_col < rows) out[at(out_row, out_col, rows)] = tile[local_id(0)][local_id(1)];
}
)";

TEST(Nvrtc, ReportsItsVersionAndArchitectures) {
  REQUIRE_NVRTC(nvrtc);
  EXPECT_NE(nvrtc->version(), "0.0");
  ASSERT_FALSE(nvrtc->archs().empty());
  EXPECT_TRUE(std::is_sorted(nvrtc->archs().begin(), nvrtc->archs().end()));
  // Every NVRTC from CUDA 12 on targets Ampere and Hopper.
  EXPECT_NE(std::find(nvrtc->archs().begin(), nvrtc->archs().end(), 80), nvrtc->archs().end());
  EXPECT_NE(std::find(nvrtc->archs().begin(), nvrtc->archs().end(), 90), nvrtc->archs().end());
}

TEST(Nvrtc, PortableKernelsCompileToCubins) {
  REQUIRE_NVRTC(nvrtc);
  const NvrtcOutput saxpy = nvrtc->compile(kPortablePrelude + std::string(kSaxpy), "saxpy", 90, {});
  ASSERT_TRUE(saxpy.ok) << saxpy.log;
  EXPECT_TRUE(saxpy.is_cubin);
  EXPECT_TRUE(is_elf(saxpy.image));
  EXPECT_EQ(saxpy.lowered_name, "saxpy");  // KERNEL is extern "C"

  const NvrtcOutput transpose = nvrtc->compile(kPortablePrelude + std::string(kTiledTranspose),
                                               "transpose", 80, {"-DTILE=16"});
  ASSERT_TRUE(transpose.ok) << transpose.log;
  EXPECT_TRUE(is_elf(transpose.image));
}

// hal's own kernels (kernels/, embedded in the library) compile for CUDA in every variant the
// library asks for, though no GPU may be here to run them.
TEST(Nvrtc, TheLibrarysKernelsCompile) {
  REQUIRE_NVRTC(nvrtc);
  struct Variant {
    const char* file;
    std::string kernel;
    std::vector<std::string> options;
  };
  const Variant variants[] = {
      {"tensor/strided_copy", "strided_copy", {"-DELEMENT=uchar"}},
      {"tensor/strided_copy", "strided_copy", {"-DELEMENT=ushort"}},
      {"tensor/strided_copy", "strided_copy", {"-DELEMENT=uint"}},
      {"tensor/strided_copy", "strided_copy", {"-DELEMENT=ulong"}},
      {"tensor/random", "random_uniform", {}},
      {"tensor/random", "random_normal", {}},
      {"tensor/random", "random_uniform", {"-DOUT_F64"}},
      {"tensor/random", "random_normal", {"-DOUT_F64"}},
  };
  std::vector<Variant> all(std::begin(variants), std::end(variants));
  // The op kernels, with the defines the ops themselves use.
  const DType computed[] = {DType::f32, DType::f64, DType::i32, DType::i64};
  auto with_dashes = [](std::vector<std::string> defines) {
    for (std::string& d : defines) d = "-D" + d;
    return defines;
  };
  for (int op = 0; op <= static_cast<int>(ops::Binary::ge); ++op)
    for (DType dtype : computed) {
      const auto binary = static_cast<ops::Binary>(op);
      if (binary == ops::Binary::pow && (dtype == DType::i32 || dtype == DType::i64)) continue;
      all.push_back(
          {"ops/elementwise", "binary_strided", with_dashes(ops::binary_defines(binary, dtype))});
    }
  for (int op = 0; op <= static_cast<int>(ops::Unary::silu); ++op)
    for (DType dtype : computed) {
      const auto unary = static_cast<ops::Unary>(op);
      const bool integer_ok =
          unary == ops::Unary::neg || unary == ops::Unary::abs || unary == ops::Unary::relu;
      if (!integer_ok && (dtype == DType::i32 || dtype == DType::i64)) continue;
      all.push_back(
          {"ops/elementwise", "unary_strided", with_dashes(ops::unary_defines(unary, dtype))});
    }
  for (size_t size : {1, 2, 4, 8})
    all.push_back({"ops/elementwise", "where_strided", with_dashes(ops::where_defines(size))});
  for (size_t size : {2, 4, 8})  // embedding's rows of f16/bf16, f32 and f64
    all.push_back({"ops/elementwise", "gather_rows", with_dashes(ops::where_defines(size))});
  all.push_back({"ops/embedding", "embedding_links", {}});  // embedding_backward's two passes
  for (DType dtype : {DType::f32, DType::f64})
    all.push_back(
        {"ops/embedding", "embedding_add_rows", with_dashes(ops::embedding_defines(dtype))});
  // A cast's flat kernel converts as its strided one does: the flat ones to and from f32 (every
  // load and every store) stand for the other 144 pairs, which take 0.1 s each here.
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes) {
      all.push_back({"ops/cast", "cast_strided", with_dashes(ops::cast_defines(from, to))});
      if (from == DType::f32 || to == DType::f32)
        all.push_back({"ops/cast", "cast_flat", with_dashes(ops::cast_defines(from, to))});
    }
  for (int op = 0; op <= static_cast<int>(ops::Reduce::argmax); ++op)
    for (DType dtype : computed) {
      const auto reduce = static_cast<ops::Reduce>(op);
      if (reduce == ops::Reduce::mean && (dtype == DType::i32 || dtype == DType::i64)) continue;
      all.push_back({"ops/reduce", "reduce", with_dashes(ops::reduce_defines(reduce, dtype, 256))});
    }
  // Two-stage reductions over one contiguous run, items folding adjacent elements or not.
  for (ops::Reduce reduce : {ops::Reduce::sum, ops::Reduce::argmax})
    for (bool runs : {false, true}) {
      std::vector<std::string> defines = ops::reduce_defines(reduce, DType::f32, 256);
      defines.emplace_back("REDUCED_CONTIGUOUS");
      if (runs) defines.emplace_back("ITEM_RUNS");
      all.push_back({"ops/reduce", "reduce_partial", with_dashes(defines)});
    }
  // The ops that normalise rows, and the norms' gradients in their three passes.
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const char* op : {"softmax", "log_softmax", "layer_norm", "rms_norm"})
      all.push_back({"ops/rowwise", "rowwise", with_dashes(ops::rowwise_defines(op, dtype, 256))});
    for (const char* entry : {"norm_backward_rows", "norm_backward_columns", "norm_backward_final"})
      all.push_back({"ops/rowwise", entry, with_dashes(ops::rowwise_defines("", dtype, 256))});
  }
  // hal's GEMM: the tiled family (CUDA has no vector types: VEC=1), f32 and bf16, transposed.
  for (const char* value : {"-DVALUE_T=float", "-DVALUE_T=ushort -DT_BF16"})
    for (const char* transposes : {"", "-DTRANS_A -DTRANS_B"}) {
      std::vector<std::string> defines{"-DTILE_M=64", "-DTILE_N=64", "-DTILE_K=16",
                                       "-DWG_M=16",   "-DWG_N=16",   "-DVEC=1"};
      for (const std::string& words : {std::string(value), std::string(transposes)})
        for (size_t at = 0; at < words.size();) {
          const size_t space = std::min(words.find(' ', at), words.size());
          defines.push_back(words.substr(at, space - at));
          at = space + 1;
        }
      all.push_back({"ops/gemm", "gemm", defines});
      defines[0] = "-DTILE_M=4";  // the direct family: 4 x 8 sums per item
      defines[1] = "-DTILE_N=8";
      defines.emplace_back("-DDIRECT");
      all.push_back({"ops/gemm", "gemm", defines});
    }
  // Its epilogues: a bias and each activation, in both families.
  for (const char* activation : {"RELU", "GELU", "TANH", "SIGMOID", "SILU"})
    for (bool direct : {false, true}) {
      std::vector<std::string> defines{
          "-DVALUE_T=float", "-DTILE_M=64", "-DTILE_N=64",
          "-DTILE_K=16",     "-DWG_M=16",   "-DWG_N=16",
          "-DVEC=1",         "-DEPI_BIAS",  std::string("-DEPI_") + activation};
      if (direct) {
        defines[1] = "-DTILE_M=4";
        defines[2] = "-DTILE_N=8";
        defines.emplace_back("-DDIRECT");
      }
      all.push_back({"ops/gemm", "gemm", defines});
    }
  // Each entry is compiled alone, as detail::compile_program compiles it (HAL_ENTRY_<entry>):
  // the flat kernel of every strided one (but the casts'), and the second stage of every
  // two-stage reduction.
  for (size_t i = 0, listed = all.size(); i < listed; ++i) {
    const Variant v = all[i];
    const size_t strided = v.kernel.rfind("_strided");
    if (strided != std::string::npos && strided + 8 == v.kernel.size() &&
        v.kernel != "cast_strided")
      all.push_back({v.file, v.kernel.substr(0, strided) + "_flat", v.options});
    if (v.kernel == "reduce_partial") all.push_back({v.file, "reduce_final", v.options});
  }
  for (Variant& v : all) {
    for (const std::string& define : detail::entry_defines({}, v.kernel))
      v.options.push_back("-D" + define);
    const NvrtcOutput output = nvrtc->compile(
        kPortablePrelude + std::string(embedded_kernel(v.file)), v.kernel, 90, v.options);
    std::string options;
    for (const std::string& option : v.options) options += " " + option;
    EXPECT_TRUE(output.ok) << v.file << " " << v.kernel << options << ": " << output.log;
  }
}

// The kernels generated for fused chains: every arithmetic op and element function in one
// chain, in f32 and f64, at ranks 1 and 6.
TEST(Nvrtc, FusedChainKernelsCompile) {
  REQUIRE_NVRTC(nvrtc);
  ops::FusedProgram program;
  program.inputs = 2;
  for (int op = 0; op <= static_cast<int>(ops::Binary::pow); ++op) {
    const auto last = static_cast<uint16_t>(program.inputs + program.steps.size() - 1);
    program.steps.push_back({true, static_cast<uint8_t>(op), last, 0});
  }
  for (int op = 0; op <= static_cast<int>(ops::Unary::atanh); ++op) {
    const auto last = static_cast<uint16_t>(program.inputs + program.steps.size() - 1);
    program.steps.push_back({false, static_cast<uint8_t>(op), last, 0});
  }
  for (DType dtype : {DType::f32, DType::f64})
    for (size_t rank : {1, 6}) {
      std::vector<std::string> options;
      for (const std::string& define : ops::fused_defines(dtype)) options.push_back("-D" + define);
      const std::string source = kPortablePrelude +
                                 std::string(embedded_kernel("ops/elementwise")) + "\n" +
                                 ops::fused_kernel_source(program, rank);
      const NvrtcOutput output = nvrtc->compile(source, "fused", 90, options);
      EXPECT_TRUE(output.ok) << to_string(dtype) << " rank " << rank << ": " << output.log;
    }
}

TEST(Nvrtc, DefinesReachTheSource) {
  REQUIRE_NVRTC(nvrtc);
  const NvrtcOutput output =
      nvrtc->compile(kPortablePrelude + std::string(kTiledTranspose), "transpose", 90, {});
  ASSERT_FALSE(output.ok);
  EXPECT_NE(output.log.find("TILE must be defined"), std::string::npos) << output.log;
}

TEST(Nvrtc, ErrorsGiveTheLogWithLinesOfTheUsersSource) {
  REQUIRE_NVRTC(nvrtc);
  const std::string source = "KERNEL void broken(GLOBAL float* x) {\n  x[0] = undeclared;\n}\n";
  const NvrtcOutput output = nvrtc->compile(kPortablePrelude + source, "broken", 90, {});
  ASSERT_FALSE(output.ok);
  EXPECT_TRUE(output.image.empty());
  EXPECT_NE(output.log.find("undeclared"), std::string::npos) << output.log;
  // The prelude ends with #line 1, so the error is on line 2 of what the user wrote.
  EXPECT_NE(output.log.find("(2)"), std::string::npos) << output.log;
  EXPECT_NE(output.log.find("broken.cu"), std::string::npos) << output.log;
  EXPECT_FALSE(output.missing_kernel);  // the kernel is there; its body is wrong
}

TEST(Nvrtc, AMissingKernelIsAnError) {
  REQUIRE_NVRTC(nvrtc);
  const NvrtcOutput output =
      nvrtc->compile(kPortablePrelude + std::string(kSaxpy), "no_such_kernel", 90, {});
  ASSERT_FALSE(output.ok);
  EXPECT_TRUE(output.missing_kernel) << output.log;  // so the device says NotFound
  EXPECT_EQ(output.log.rfind("the program has no kernel 'no_such_kernel'", 0), 0u) << output.log;
  // A missing kernel in a source that is wrong besides is the source's error.
  const NvrtcOutput broken =
      nvrtc->compile(kPortablePrelude + std::string(kSaxpy) + "\nint broken = undeclared;\n",
                     "no_such_kernel", 90, {});
  ASSERT_FALSE(broken.ok);
  EXPECT_FALSE(broken.missing_kernel) << broken.log;
  EXPECT_NE(broken.log.find("undeclared"), std::string::npos) << broken.log;
}

TEST(Nvrtc, CudaTemplatesAreFoundByTheirExpression) {
  REQUIRE_NVRTC(nvrtc);
  const std::string source = R"(
template <class T> __global__ void scale(T* x, T a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
template __global__ void scale<float>(float*, float, unsigned);
)";
  const NvrtcOutput output = nvrtc->compile(source, "scale<float>", 90, {});
  ASSERT_TRUE(output.ok) << output.log;
  EXPECT_EQ(output.lowered_name.rfind("_Z", 0), 0u) << output.lowered_name;  // a C++ symbol
}

TEST(Nvrtc, NewerArchitecturesGetPtxAndOlderOnesAnError) {
  REQUIRE_NVRTC(nvrtc);
  const int newest = nvrtc->archs().back();
  const NvrtcOutput ptx =
      nvrtc->compile(kPortablePrelude + std::string(kSaxpy), "saxpy", newest + 1, {});
  ASSERT_TRUE(ptx.ok) << ptx.log;
  EXPECT_FALSE(ptx.is_cubin);
  EXPECT_NE(ptx.image.find(".entry saxpy"), std::string::npos);

  const NvrtcOutput old = nvrtc->compile(kPortablePrelude + std::string(kSaxpy), "saxpy", 20, {});
  ASSERT_FALSE(old.ok);
  EXPECT_NE(old.log.find("cannot compile for sm_20"), std::string::npos) << old.log;
}

}  // namespace
}  // namespace hal::cuda
