// hal's programs with several kernels compile one kernel at a time (detail::compile_program
// defines HAL_ENTRY_<entry>): every entry survives its own guard, and the program holds nothing
// else, so a driver that compiles every kernel of a program (PoCL, twice) compiles one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/embedded_kernels.hpp"
#include "core/program_kernels.hpp"
#include "ops/portable_defines.hpp"
#include "test_util.hpp"

namespace hal {
namespace {

struct Program {
  const char* file;
  std::vector<std::string> entries;  // every kernel of the file under `defines`
  std::vector<std::string> defines;
};

std::vector<Program> programs_with_several_kernels() {
  std::vector<std::string> reduce = ops::reduce_defines(ops::Reduce::sum, DType::f32, 64);
  reduce.emplace_back("REDUCED_CONTIGUOUS");
  return {
      {"ops/elementwise",
       {"binary_flat", "binary_strided"},
       ops::binary_defines(ops::Binary::add, DType::f32)},
      {"ops/elementwise",
       {"unary_flat", "unary_strided"},
       ops::unary_defines(ops::Unary::relu, DType::f32)},
      {"ops/elementwise", {"where_flat", "where_strided"}, ops::where_defines(4)},
      {"ops/cast", {"cast_flat", "cast_strided"}, ops::cast_defines(DType::f32, DType::i32)},
      {"ops/reduce", {"reduce", "reduce_partial", "reduce_final"}, reduce},
      {"ops/rowwise",
       {"rowwise", "norm_backward_rows", "norm_backward_columns", "norm_backward_final"},
       ops::rowwise_defines("layer_norm", DType::f32, 64)},
      {"tensor/random", {"random_uniform", "random_normal"}, {}},
  };
}

class ProgramEntries : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<Device> opencl = test::backend_devices("opencl");
    if (opencl.empty()) GTEST_SKIP() << "no opencl:0: " << test::backend_reason("opencl");
    device_ = opencl.front();
  }
  Device device_;
};

TEST_F(ProgramEntries, EveryEntryCompilesAlone) {
  for (const Program& program : programs_with_several_kernels())
    for (const std::string& entry : program.entries) {
      SCOPED_TRACE(std::string(program.file) + " " + entry);
      const Kernel kernel = detail::compile_program(device_, program.file, entry, program.defines);
      EXPECT_EQ(kernel.name(), entry);
    }
}

// The source of each entry, asked for each other kernel of the program: the driver names the
// one kernel the program holds.
TEST_F(ProgramEntries, AnEntrysProgramHoldsNoOtherKernel) {
  for (const Program& program : programs_with_several_kernels())
    for (const std::string& kept : program.entries) {
      const std::vector<std::string> defines = detail::entry_defines(program.defines, kept);
      for (const std::string& other : program.entries) {
        if (other == kept) continue;
        SCOPED_TRACE(std::string(program.file) + ": " + other + " beside " + kept);
        test::expect_error(
            [&] {
              device_.compile(
                  {other, std::string(embedded_kernel(program.file)), KernelLanguage::portable},
                  {.defines = defines, .disk_cache = false});
            },
            ErrorCode::NotFound, {"has no kernel '" + other + "'", "it has: " + kept});
      }
    }
}

}  // namespace
}  // namespace hal
