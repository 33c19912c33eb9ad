// The resize ONNX ops (Resize, Upsample) against plain loops on the host: bilinear, bicubic
// with its options, nearest on integers, the crop with its extrapolation value, and the errors
// for bad inputs and what hal does not implement.
#include <cmath>

#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

void int64_initializer(ModelBuilder& builder, const std::string& name,
                       const std::vector<int64_t>& values) {
  auto& tensor = builder.raw_initializer(name);
  tensor.set_data_type(TensorProto::INT64);
  tensor.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) tensor.add_int64_data(v);
}

std::vector<float> ramp(size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>((i * 7) % 11) - 3.5f;
  return values;
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-5 + 1e-5 * std::abs(expected[i])) << "element " << i;
}

double half_pixel(int64_t out_position, int64_t in, int64_t out) {
  return (static_cast<double>(out_position) + 0.5) * static_cast<double>(in) /
             static_cast<double>(out) -
         0.5;
}

int64_t clamped(double position, int64_t extent) {
  return std::clamp(static_cast<int64_t>(position), int64_t{0}, extent - 1);
}

// Bilinear interpolation at (y, x) of an h x w image, the image's edges repeated beyond it.
float bilinear(const std::vector<float>& image, int64_t h, int64_t w, double y, double x) {
  const double y0 = std::floor(y), x0 = std::floor(x);
  const double fy = y - y0, fx = x - x0;
  auto at = [&](double row, double col) {
    return static_cast<double>(image[static_cast<size_t>(clamped(row, h) * w + clamped(col, w))]);
  };
  return static_cast<float>((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) +
                            fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1)));
}

// Keys' cubic kernel at distance d with coefficient a.
double keys(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

Tensor run_one(const Model& model, Tensor x, Stream& stream) {
  return model.run({{"x", std::move(x)}}, stream).at("y");
}

TEST(ResizeOps, LinearHalfPixelMatchesAPlainLoop) {
  constexpr int64_t h = 3, w = 5, out_h = 7, out_w = 4;  // taller and narrower
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"1", "2", "3", "5"})
      .output("y", TensorProto::FLOAT, {"1", "2", "7", "4"});
  int64_initializer(builder, "sizes", {1, 2, out_h, out_w});
  ModelBuilder::set_string(builder.node("Resize", {"x", "", "", "sizes"}, {"y"}), "mode", "linear");
  const Model model = load_onnx_bytes(builder.bytes(), "bilinear");

  Stream stream = device("cpu:0").create_stream();
  const std::vector<float> x = ramp(2 * h * w);
  const Tensor y = run_one(model, from_vector(x, {1, 2, h, w}, stream), stream);
  EXPECT_EQ(y.shape(), (Shape{1, 2, out_h, out_w}));
  std::vector<float> expected;
  for (int64_t c = 0; c < 2; ++c) {
    const std::vector<float> image(x.begin() + c * h * w, x.begin() + (c + 1) * h * w);
    for (int64_t i = 0; i < out_h; ++i)
      for (int64_t j = 0; j < out_w; ++j)
        expected.push_back(bilinear(image, h, w, half_pixel(i, h, out_h), half_pixel(j, w, out_w)));
  }
  expect_close(y.to_vector<float>(stream), expected);
}

TEST(ResizeOps, CubicWithItsOptionsMatchesAPlainLoop) {
  constexpr int64_t in = 7, out = 10;
  constexpr double a = -0.5, scale = 1.5;
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"7"}).output("y", TensorProto::FLOAT, {"10"});
  builder.initializer("scales", {1}, {static_cast<float>(scale)});
  auto& node = builder.node("Resize", {"x", "", "scales"}, {"y"});
  ModelBuilder::set_string(node, "mode", "cubic");
  ModelBuilder::set_string(node, "coordinate_transformation_mode", "asymmetric");
  ModelBuilder::set_float(node, "cubic_coeff_a", static_cast<float>(a));
  ModelBuilder::set_int(node, "exclude_outside", 1);
  const Model model = load_onnx_bytes(builder.bytes(), "bicubic");

  Stream stream = device("cpu:0").create_stream();
  const std::vector<float> x = ramp(in);
  std::vector<float> expected;
  for (int64_t i = 0; i < out; ++i) {
    const double origin = static_cast<double>(i) / scale;
    const auto first = static_cast<int64_t>(std::floor(origin)) - 1;
    double total = 0, weights = 0;
    for (int64_t k = first; k < first + 4; ++k) {
      if (k < 0 || k >= in) continue;  // exclude_outside: no weight outside the input
      const double weight = keys(origin - static_cast<double>(k), a);
      total += weight * x[static_cast<size_t>(k)];
      weights += weight;
    }
    expected.push_back(static_cast<float>(total / weights));
  }
  expect_close(run_one(model, from_vector(x, {in}, stream), stream).to_vector<float>(stream),
               expected);
}

TEST(ResizeOps, NearestPicksElementsOfAnyDtype) {
  constexpr int64_t h = 2, w = 5, out_h = 3, out_w = 8;
  ModelBuilder builder;
  builder.input("x", TensorProto::INT32, {"2", "5"}).output("y", TensorProto::INT32, {"3", "8"});
  int64_initializer(builder, "sizes", {out_h, out_w});
  builder.node("Resize", {"x", "", "", "sizes"}, {"y"});  // half_pixel, round_prefer_floor
  const Model model = load_onnx_bytes(builder.bytes(), "nearest");

  Stream stream = device("cpu:0").create_stream();
  std::vector<int32_t> x(h * w);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i * 1000 + 7);
  auto nearest = [](double position, int64_t extent) {
    const double below = std::floor(position);
    return clamped(position - below > 0.5 ? below + 1 : below, extent);  // halves go down
  };
  std::vector<int32_t> expected;
  for (int64_t i = 0; i < out_h; ++i)
    for (int64_t j = 0; j < out_w; ++j)
      expected.push_back(x[static_cast<size_t>(nearest(half_pixel(i, h, out_h), h) * w +
                                               nearest(half_pixel(j, w, out_w), w))]);
  EXPECT_EQ(run_one(model, from_vector(x, {h, w}, stream), stream).to_vector<int32_t>(stream),
            expected);
}

TEST(ResizeOps, TheCropFillsBeyondTheInputWithTheExtrapolationValue) {
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"5"}).output("y", TensorProto::FLOAT, {"5"});
  builder.initializer("roi", {2}, {0.5f, 1.5f});
  int64_initializer(builder, "sizes", {5});
  auto& node = builder.node("Resize", {"x", "roi", "", "sizes"}, {"y"});
  ModelBuilder::set_string(node, "mode", "linear");
  ModelBuilder::set_string(node, "coordinate_transformation_mode", "tf_crop_and_resize");
  ModelBuilder::set_float(node, "extrapolation_value", -1);
  const Model model = load_onnx_bytes(builder.bytes(), "crop");

  // Output i reads input 2 + i; inputs 5 and 6 lie beyond the last, 4.
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({10, 11, 12, 13, 14}, {5}, stream);
  EXPECT_EQ(run_one(model, x, stream).to_vector<float>(stream),
            (std::vector<float>{12, 13, 14, -1, -1}));
}

TEST(ResizeOps, Upsample7RepeatsByItsScalesAttribute) {
  ModelBuilder builder(7);
  builder.input("x", TensorProto::FLOAT, {"2", "2"}).output("y", TensorProto::FLOAT, {"4", "6"});
  auto& node = builder.node("Upsample", {"x"}, {"y"});
  auto* scales = node.add_attribute();
  scales->set_name("scales");
  scales->set_type(onnx::AttributeProto::FLOATS);
  for (float s : {2.0f, 3.0f}) scales->add_floats(s);
  const Model model = load_onnx_bytes(builder.bytes(), "upsample");

  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2}, stream);
  std::vector<float> expected;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) expected.push_back(static_cast<float>(1 + (i / 2) * 2 + j / 3));
  EXPECT_EQ(run_one(model, x, stream).to_vector<float>(stream), expected);
}

// A rank-2 float Resize at `opset` with `mode` and the given scales and sizes (empty: not given).
Model resize_model(const std::string& mode, const std::vector<float>& scales,
                   const std::vector<int64_t>& sizes, int64_t opset = 13) {
  ModelBuilder builder(opset);
  builder.input("x", TensorProto::FLOAT, {"2", "2"}).output("y", TensorProto::FLOAT, {"A", "B"});
  if (!scales.empty()) builder.initializer("scales", {static_cast<int64_t>(scales.size())}, scales);
  if (!sizes.empty()) int64_initializer(builder, "sizes", sizes);
  auto& node = builder.node("Resize",
                            {"x", "", scales.empty() ? "" : "scales", sizes.empty() ? "" : "sizes"},
                            {"y"}, "grow");
  ModelBuilder::set_string(node, "mode", mode);
  return load_onnx_bytes(builder.bytes(), "resize");
}

TEST(ResizeOps, BadInputsAreRefusedNamingWhatWasWrong) {
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2}, stream);
  expect_error(
      [&] {
        run_one(resize_model("linear", {2, 2}, {4, 4}), x, stream);
      },
      ErrorCode::InvalidArgument, {"node 'grow'", "exactly one of scales and sizes"});
  expect_error([&] { run_one(resize_model("linear", {}, {}), x, stream); },
               ErrorCode::InvalidArgument, {"exactly one of scales and sizes"});
  expect_error(
      [&] {
        run_one(resize_model("linear", {1, 2, 2}, {}), x, stream);
      },
      ErrorCode::InvalidArgument, {"scales has 3 values for the rank-2 input"});
  expect_error(
      [&] {
        run_one(resize_model("linear", {1, -2}, {}), x, stream);
      },
      ErrorCode::InvalidArgument, {"scale -2 is not a positive finite number"});
  expect_error(
      [&] {
        run_one(resize_model("nearest", {1, 1e30f}, {}), x, stream);
      },
      ErrorCode::InvalidArgument, {"scale 1e+30 of dimension 1", "past what a tensor can hold"});
  expect_error(
      [&] {
        run_one(resize_model("linear", {}, {4, -1}), x, stream);
      },
      ErrorCode::InvalidArgument, {"size -1 is negative"});
  expect_error(
      [&] {
        run_one(resize_model("bicubic", {}, {4, 4}), x, stream);
      },
      ErrorCode::InvalidArgument, {"mode 'bicubic' is not one ONNX defines at opset 13"});

  ModelBuilder crop;
  crop.input("x", TensorProto::FLOAT, {"2", "2"}).output("y", TensorProto::FLOAT, {"3", "3"});
  int64_initializer(crop, "sizes", {3, 3});
  ModelBuilder::set_string(crop.node("Resize", {"x", "", "", "sizes"}, {"y"}),
                           "coordinate_transformation_mode", "tf_crop_and_resize");
  expect_error([&] { run_one(load_onnx_bytes(crop.bytes(), "crop"), x, stream); },
               ErrorCode::InvalidArgument, {"tf_crop_and_resize needs a roi"});

  ModelBuilder shrink(9);
  shrink.input("x", TensorProto::FLOAT, {"2", "2"}).output("y", TensorProto::FLOAT, {"1", "2"});
  shrink.initializer("scales", {2}, {0.5f, 1});
  shrink.node("Upsample", {"x", "scales"}, {"y"});
  expect_error([&] { run_one(load_onnx_bytes(shrink.bytes(), "shrink"), x, stream); },
               ErrorCode::InvalidArgument, {"Upsample", "scale 0.5 is below 1"});
}

TEST(ResizeOps, InterpolatingIntegersIsUnsupported) {
  ModelBuilder builder;
  builder.input("x", TensorProto::INT32, {"2", "2"}).output("y", TensorProto::INT32, {"4", "4"});
  int64_initializer(builder, "sizes", {4, 4});
  ModelBuilder::set_string(builder.node("Resize", {"x", "", "", "sizes"}, {"y"}), "mode", "cubic");
  const Model model = load_onnx_bytes(builder.bytes(), "ints");
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        run_one(model, from_vector<int32_t>({1, 2, 3, 4}, {2, 2}, stream), stream);
      },
      ErrorCode::Unsupported, {"cubic interpolation of i32 input"});
}

}  // namespace
}  // namespace hal::test
