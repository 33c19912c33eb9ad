// The op table on every device: type promotion's rules, the table listing every op of the
// header, and errors that name the op, dtypes, shapes and device. What the table promises of
// the results (promotion, small integers that wrap, exact integer sums, casts that round once,
// special values through every unary op) are conformance cases (cts/op_reference_cases.cpp,
// cts/op_reduce_cases.cpp), as is each op running in each dtype the table lists (op.table.*).
#include "op_values.hpp"
#include "ops/op_table.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

class OpTableSuite : public DeviceTest {
 protected:
  Stream stream = device().create_stream();
  bool runs(std::string_view op, DType dtype) const { return supports_op(device(), op, dtype); }
};

// PyTorch's table, NumPy's among the integers (python/tests/test_ops.py checks every pair
// against torch.promote_types and np.promote_types).
TEST(TypePromotion, FollowsPyTorchAndNumPy) {
  using enum DType;
  struct Row {
    DType a, b, want;
  };
  const Row rows[] = {
      {f32, f32, f32},  {f32, i32, f32},   {i64, f16, f16},     {f16, bf16, f32},
      {bf16, f64, f64}, {i8, u8, i16},     {i16, u16, i32},     {u16, i32, i32},
      {u32, i8, i64},   {u32, i64, i64},   {u64, i64, f64},     {u64, u8, u64},
      {u64, f16, f16},  {u16, u32, u32},   {i16, i8, i16},      {u8, i32, i32},
      {i32, i64, i64},  {boolean, u8, u8}, {boolean, f16, f16}, {boolean, boolean, boolean},
      {i8, i8, i8},     {f16, f32, f32},   {u8, u8, u8}};
  for (const Row& row : rows) {
    EXPECT_EQ(promote_types(row.a, row.b), row.want)
        << to_string(row.a) << " with " << to_string(row.b);
    EXPECT_EQ(promote_types(row.b, row.a), row.want) << "symmetric: " << to_string(row.b);
  }
}

// Each family's enum finds its own descriptor: the table's positions follow the enums.
TEST(OpDescriptors, EveryEnumValueFindsItsOwnDescriptor) {
  for (uint8_t code = 0; code <= static_cast<uint8_t>(ops::Unary::atanh); ++code) {
    const ops::OpDescriptor& d = ops::descriptor(static_cast<ops::Unary>(code));
    EXPECT_EQ(d.family, ops::OpFamily::unary) << d.name;
    EXPECT_EQ(d.code, code) << d.name;
  }
  for (uint8_t code = 0; code <= static_cast<uint8_t>(ops::Binary::ge); ++code) {
    const ops::OpDescriptor& d = ops::descriptor(static_cast<ops::Binary>(code));
    EXPECT_EQ(d.family, ops::OpFamily::binary) << d.name;
    EXPECT_EQ(d.code, code) << d.name;
  }
  for (uint8_t code = 0; code <= static_cast<uint8_t>(ops::Reduce::argmax); ++code) {
    const ops::OpDescriptor& d = ops::descriptor(static_cast<ops::Reduce>(code));
    EXPECT_EQ(d.family, ops::OpFamily::reduce) << d.name;
    EXPECT_EQ(d.code, code) << d.name;
  }
  EXPECT_EQ(ops::where_descriptor().name, "where");
  EXPECT_EQ(ops::cast_descriptor().name, "cast");
  EXPECT_EQ(ops::matmul_descriptor().name, "matmul");
  EXPECT_EQ(ops::conv_descriptor().name, "conv");
  EXPECT_EQ(ops::fused_descriptor().name, "fused_elementwise");
  EXPECT_EQ(ops::concat_descriptor().name, "concat");
}

TEST_P(OpTableSuite, ListsEveryOpOfTheHeader) {
  const std::vector<std::string> header_ops{"add",
                                            "sub",
                                            "mul",
                                            "div",
                                            "maximum",
                                            "minimum",
                                            "pow",
                                            "eq",
                                            "ne",
                                            "lt",
                                            "le",
                                            "gt",
                                            "ge",
                                            "where",
                                            "cast",
                                            "neg",
                                            "abs",
                                            "relu",
                                            "exp",
                                            "log",
                                            "sqrt",
                                            "rsqrt",
                                            "tanh",
                                            "sigmoid",
                                            "gelu",
                                            "silu",
                                            "erf",
                                            "floor",
                                            "ceil",
                                            "round",
                                            "sin",
                                            "cos",
                                            "tan",
                                            "asin",
                                            "acos",
                                            "atan",
                                            "sinh",
                                            "cosh",
                                            "asinh",
                                            "acosh",
                                            "atanh",
                                            "sum",
                                            "mean",
                                            "max",
                                            "min",
                                            "argmax",
                                            "softmax",
                                            "log_softmax",
                                            "layer_norm",
                                            "rms_norm",
                                            "matmul",
                                            "conv",
                                            "conv_transpose",
                                            "fused_elementwise",
                                            "concat",
                                            "embedding",
                                            "embedding_backward",
                                            "cross_entropy",
                                            "cross_entropy_backward",
                                            "dropout",
                                            "max_pool",
                                            "avg_pool",
                                            "layer_norm_backward",
                                            "rms_norm_backward"};
  const std::vector<OpSupport> table = supported_ops(device());
  ASSERT_EQ(table.size(), header_ops.size());
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].name, header_ops[i]);
    ASSERT_EQ(table[i].kernels.size(), table[i].dtypes.size()) << table[i].name;
  }
  expect_error([&] { supports_op(device(), "conv9d", DType::f32); }, ErrorCode::NotFound,
               {"conv9d"});
  // That each op does what the table lists, in every dtype, is op.table.* of the CTS.
}

TEST_P(OpTableSuite, ErrorsNameTheOpTheDtypesTheShapesAndTheDevice) {
  for (DType dtype : {DType::f16, DType::i8, DType::boolean}) {
    const Tensor a = zeros({2, 3}, DType::f32, stream);
    if (!runs("cast", DType::f32)) break;
    const Tensor x = cast(a, dtype, stream);
    for (const char* op : {"add", "pow", "lt"}) {
      if (runs(op, dtype)) continue;
      const std::string want = std::string(op) + " of " + std::string(to_string(dtype)) + "[2, 3]";
      expect_error(
          [&] {
            if (std::string(op) == "add") add(x, x, stream);
            if (std::string(op) == "pow") pow(x, x, stream);
            if (std::string(op) == "lt") lt(x, x, stream);
          },
          ErrorCode::Unsupported, {want, id(), "no kernel for " + std::string(to_string(dtype))});
    }
  }
  if (runs("where", DType::f32) || !runs("add", DType::f32)) return;
  // A device without `where` (sim) names it, with the dtypes and shapes.
  const Tensor cond = zeros({2}, DType::boolean, stream), y = zeros({2}, DType::f32, stream);
  expect_error([&] { where(cond, y, y, stream); }, ErrorCode::Unsupported,
               {"where of bool[2]", "f32[2]", id()});
}

HAL_DEVICE_SUITE(OpTableSuite);

}  // namespace
}  // namespace hal::test
