// The request codec alone (no server, no device): what decides which requests stack into one
// batch.
#include <gtest/gtest.h>

#include <string>

#include "serve/infer_codec.hpp"

namespace hal::test {
namespace {

serve::ModelSignature two_inputs() {
  serve::ModelSignature signature;
  signature.name = "pair";
  signature.inputs = {{"a", DType::f32, {-1, -1}}, {"b", DType::f32, {-1, -1}}};
  signature.outputs = {{"y", DType::f32, {-1, -1}}};
  signature.batchable = true;
  signature.max_batch = 8;
  return signature;
}

// {"inputs": [first, second]}, each one row of `columns` zeros.
std::string body(const std::string& first, int first_columns, const std::string& second,
                 int second_columns) {
  const auto input = [](const std::string& name, int columns) {
    std::string data;
    for (int i = 0; i < columns; ++i) data += i ? ",0" : "0";
    return R"({"name":")" + name + R"(","datatype":"FP32","shape":[1,)" + std::to_string(columns) +
           R"(],"data":[)" + data + "]}";
  };
  return R"({"inputs":[)" + input(first, first_columns) + "," + input(second, second_columns) +
         "]}";
}

TEST(ServeCodec, RequestsStackOnlyWhereEveryInputHasTheSameRowShape) {
  const serve::ModelSignature signature = two_inputs();
  const auto key = [&](const std::string& text) {
    return serve::parse_infer_request(text, std::nullopt, signature).shape_key;
  };
  // a is [1, 3] and b [1, 2], listed in either order: one key.
  const std::string a3_b2 = key(body("a", 3, "b", 2));
  EXPECT_EQ(key(body("b", 2, "a", 3)), a3_b2);
  // The same list of shapes on the other inputs is another key: stacked together, a's rows
  // would be 3 and 2 floats long in one tensor.
  EXPECT_NE(key(body("b", 3, "a", 2)), a3_b2);
  EXPECT_NE(key(body("a", 2, "b", 3)), a3_b2);
}

}  // namespace
}  // namespace hal::test
