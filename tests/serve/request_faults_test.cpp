// Requests whose own data fails the model at run time (an index out of range, a size past the
// device's memory): the request that has the fault is answered 400 naming it, the requests it
// was batched with are served, and the instance stays in rotation. So does an instance whose
// warm-up fails on its made-up input, and one whose model does not split its batches by rows.
#include <gtest/gtest.h>

#include <exception>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hal/error.hpp"
#include "hal/log.hpp"
#include "serve/batch_failure.hpp"
#include "serve/model_scheduler.hpp"
#include "serve_fixture.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using json = nlohmann::json;

// ids[batch, 2] (INT64) -> Gather from a table of 10 rows of 3 -> y[batch, 2, 3]; row r of the
// table holds r, r + 0.5, r + 0.25.
std::string embedding_bytes() {
  ModelBuilder b;
  b.input("ids", onnx::TensorProto::INT64, {"batch", "2"});
  b.output("y", onnx::TensorProto::FLOAT, {"batch", "2", "3"});
  std::vector<float> table;
  for (int r = 0; r < 10; ++r)
    for (float part : {0.0f, 0.5f, 0.25f}) table.push_back(static_cast<float>(r) + part);
  b.initializer("table", {10, 3}, table);
  b.node("Gather", {"table", "ids"}, {"y"});
  return b.bytes();
}

json ids_body(int64_t first, int64_t second) {
  return {
      {"inputs",
       {{{"name", "ids"}, {"shape", {1, 2}}, {"datatype", "INT64"}, {"data", {first, second}}}}}};
}

struct Answer {
  int status = 0;
  std::string body;
};

// Posts each body to `path` at once, each from its own connection; the answers in order.
std::vector<Answer> post_at_once(int port, const std::string& path,
                                 const std::vector<json>& bodies) {
  std::vector<Answer> answers(bodies.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bodies.size(); ++i)
    threads.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(std::chrono::seconds(60));
      if (auto answer = c.Post(path, bodies[i].dump(), "application/json"))
        answers[i] = {answer->status, answer->body};
    });
  for (auto& thread : threads) thread.join();
  return answers;
}

// What a batch's run threw decides whose fault it was. The host running out of memory for a
// batch's outputs (a shape the model computes from a request's data) is the request's: before,
// std::bad_alloc was read as Internal and took the instance out of rotation for good.
TEST(ServeRequestFaults, ABadAllocIsTheRequestsFaultALostDeviceIsNot) {
  auto failure_of = [](auto thrown) {
    return serve::batch_failure(std::make_exception_ptr(thrown), 3);
  };
  const Error memory = failure_of(std::bad_alloc());
  EXPECT_EQ(memory.code(), ErrorCode::OutOfMemory);
  EXPECT_NE(std::string(memory.what()).find("the host's memory ran out running a batch of 3"),
            std::string::npos)
      << memory.what();
  EXPECT_TRUE(serve::request_fault(memory));
  const Error index = failure_of(Error(ErrorCode::OutOfRange, "index 12 of 10 rows"));
  EXPECT_EQ(index.code(), ErrorCode::OutOfRange);
  EXPECT_TRUE(serve::request_fault(index));
  const Error device = failure_of(Error(ErrorCode::DeviceLost, "sim:0 was lost"));
  EXPECT_FALSE(serve::request_fault(device));
  const Error other = failure_of(std::runtime_error("a driver's own failure"));
  EXPECT_EQ(other.code(), ErrorCode::Internal);
  EXPECT_NE(std::string(other.what()).find("a driver's own failure"), std::string::npos);
  EXPECT_FALSE(serve::request_fault(other));
  EXPECT_EQ(failure_of(42).code(), ErrorCode::Internal);
}

TEST(ServeRequestFaults, ABadRequestInABatchFailsAloneAndTheOthersAreServed) {
  TempDir dir;
  serve::ServerOptions options = options_for("embed", dir.write("embed.onnx", embedding_bytes()));
  options.models[0].batching.max_batch = 8;
  options.models[0].batching.preferred_batch_sizes = {3};  // the three requests go as one batch
  options.models[0].batching.max_queue_delay_us = 5'000'000;
  ServedModel served(options);
  const std::vector<std::pair<int64_t, int64_t>> ids = {{1, 2}, {4, 99}, {7, 0}};
  std::vector<json> bodies;
  for (const auto& [first, second] : ids) bodies.push_back(ids_body(first, second));
  const std::vector<Answer> answers =
      post_at_once(served.server.port(), "/v2/models/embed/infer", bodies);
  for (size_t i : {0u, 2u}) {
    ASSERT_EQ(answers[i].status, 200) << answers[i].body;
    const auto y = json::parse(answers[i].body)["outputs"][0]["data"].get<std::vector<float>>();
    std::vector<float> want;
    for (int64_t row : {ids[i].first, ids[i].second})
      for (float part : {0.0f, 0.5f, 0.25f}) want.push_back(static_cast<float>(row) + part);
    EXPECT_EQ(y, want) << i;
  }
  ASSERT_EQ(answers[1].status, 400) << answers[1].body;
  const std::string error = json::parse(answers[1].body).value("error", "");
  EXPECT_NE(error.find("model 'embed'"), std::string::npos) << error;
  EXPECT_NE(error.find("index 99 is out of range"), std::string::npos) << error;
  // The three came as one batch, which failed; each member then ran by itself.
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(metric(text, "hal_batch_size_count{model=\"embed\"}"), 2) << text;
  EXPECT_EQ(metric(text, "hal_instance_healthy{model=\"embed\",device=\"cpu:0\"}"), 1) << text;
  // Each request waited in the queue once, though it ran twice.
  EXPECT_EQ(metric(text, "hal_queue_duration_seconds_count{model=\"embed\"}"), 3) << text;
}

// x[batch, 1, h, w] -> Conv with a 3x3 kernel of ones, no padding -> y[batch, 1, oh, ow]. The
// warm-up's zeros are 1x1 images, which its window does not fit.
std::string conv_bytes() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {"batch", "1", "h", "w"});
  b.output("y", onnx::TensorProto::FLOAT, {"batch", "1", "oh", "ow"});
  b.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  ModelBuilder::set_ints(b.node("Conv", {"x", "w"}, {"y"}), "kernel_shape", {3, 3});
  return b.bytes();
}

json image_body(int64_t side) {
  std::vector<float> x(static_cast<size_t>(side * side));
  std::iota(x.begin(), x.end(), 0.0f);
  return {{"inputs",
           {{{"name", "x"}, {"shape", {1, 1, side, side}}, {"datatype", "FP32"}, {"data", x}}}}};
}

// The warm-up's made-up input fails the model (InvalidArgument): a fault of that input, not of
// the device, which stays in rotation and serves the images the model takes.
TEST(ServeRequestFaults, ABadWarmUpInputKeepsTheInstanceInRotation) {
  TempDir dir;
  ServedModel served(options_for("conv", dir.write("conv.onnx", conv_bytes())));
  auto ready = served.client->Get("/v2/models/conv/ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200) << ready->body;
  auto answer =
      served.client->Post("/v2/models/conv/infer", image_body(5).dump(), "application/json");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200) << answer->body;
  const json y = json::parse(answer->body)["outputs"][0];
  EXPECT_EQ(y["shape"], json({1, 1, 3, 3}));
  // Pixel (r, c) of the 5x5 image is 5r + c: a 3x3 window sums to 9 times its center.
  std::vector<float> want;
  for (int r = 1; r <= 3; ++r)
    for (int c = 1; c <= 3; ++c) want.push_back(9.0f * static_cast<float>(5 * r + c));
  EXPECT_EQ(y["data"].get<std::vector<float>>(), want);
  // An image the window does not fit is that request's fault, as any other.
  auto small =
      served.client->Post("/v2/models/conv/infer", image_body(1).dump(), "application/json");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 400) << small->body;
  EXPECT_NE(json::parse(small->body).value("error", "").find("model 'conv'"), std::string::npos)
      << small->body;
  EXPECT_EQ(served.client->Get("/v2/models/conv/ready")->status, 200);
}

// What a failed warm-up logs, and whether the instance stays: kept, at warn, for a fault of the
// made-up input; out of rotation, at error (the default level shows it), naming the model, the
// device and the error, for the device's own failure, or out of memory at the smallest input.
TEST(ServeRequestFaults, ABadDeviceInTheWarmUpIsAnErrorNamingModelDeviceAndError) {
  std::vector<std::pair<LogLevel, std::string>> lines;
  const LogLevel level = log_level();
  set_log_level(LogLevel::warn);
  set_log_sink([&](LogLevel at, std::string_view line) { lines.emplace_back(at, line); });
  const bool input = serve::survives_warm_up_failure(
      "conv", "cpu:0", Error(ErrorCode::InvalidArgument, "the window is larger than the input"));
  const bool lost =
      serve::survives_warm_up_failure("conv", "sim:1", Error(ErrorCode::DeviceLost, "sim:1 gone"));
  const bool memory = serve::survives_warm_up_failure(
      "conv", "sim:1", Error(ErrorCode::OutOfMemory, "4 GiB on a 1 GiB device"));
  // A kernel the device lacks fails every request there: out of rotation, not 400 forever.
  const bool lacking = serve::survives_warm_up_failure(
      "conv", "sim:1", Error(ErrorCode::Unsupported, "sim:1 has no f32 conv"));
  set_log_sink(nullptr);
  set_log_level(level);
  EXPECT_TRUE(input);
  EXPECT_FALSE(lost);
  EXPECT_FALSE(memory);
  EXPECT_FALSE(lacking);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].first, LogLevel::warn);
  EXPECT_NE(lines[0].second.find("model 'conv' on cpu:0: the warm-up run"), std::string::npos)
      << lines[0].second;
  EXPECT_NE(lines[0].second.find("the window is larger than the input"), std::string::npos);
  EXPECT_NE(lines[0].second.find("stays in rotation"), std::string::npos);
  for (size_t i : {1u, 2u, 3u}) {
    EXPECT_EQ(lines[i].first, LogLevel::error) << lines[i].second;
    EXPECT_NE(lines[i].second.find("model 'conv' on sim:1 is out of rotation: its warm-up run "
                                   "failed: "),
              std::string::npos)
        << lines[i].second;
  }
  EXPECT_NE(lines[1].second.find("DeviceLost"), std::string::npos) << lines[1].second;
  EXPECT_NE(lines[1].second.find("sim:1 gone"), std::string::npos) << lines[1].second;
  EXPECT_NE(lines[2].second.find("OutOfMemory"), std::string::npos) << lines[2].second;
}

// x[batch, 3] -> ReduceSum over axis 0 -> y, declared [batch, 3] but [1, 3]: a model that says
// it batches and computes across the batch.
std::string sum_over_batch_bytes() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {"batch", "3"});
  b.output("y", onnx::TensorProto::FLOAT, {"batch", "3"});
  onnx::TensorProto& axes = b.raw_initializer("axes");
  axes.set_data_type(onnx::TensorProto::INT64);
  axes.add_dims(1);
  axes.add_int64_data(0);
  b.node("ReduceSum", {"x", "axes"}, {"y"});
  return b.bytes();
}

json row_body(float first) {
  return {{"inputs",
           {{{"name", "x"},
             {"shape", {1, 3}},
             {"datatype", "FP32"},
             {"data", {first, first + 1, first + 2}}}}}};
}

// A batch whose outputs do not split by rows ran, and nothing is wrong with the device: its
// requests run again one by one, the instance stays in rotation, and the model's requests run
// one at a time from then on (without waiting for company that cannot come).
TEST(ServeRequestFaults, ABadlyBatchingModelRunsItsRequestsOneByOne) {
  TempDir dir;
  serve::ServerOptions options = options_for("sum", dir.write("sum.onnx", sum_over_batch_bytes()));
  options.models[0].batching.max_batch = 8;
  options.models[0].batching.preferred_batch_sizes = {3};  // three requests go as one batch
  options.models[0].batching.max_queue_delay_us = 10'000'000;
  ServedModel served(options);
  const int port = served.server.port();
  const std::vector<Answer> first =
      post_at_once(port, "/v2/models/sum/infer", {row_body(1), row_body(10), row_body(100)});
  for (size_t i = 0; i < first.size(); ++i) {
    ASSERT_EQ(first[i].status, 200) << i << ": " << first[i].body;
    const float x = i == 0 ? 1 : i == 1 ? 10 : 100;
    EXPECT_EQ(json::parse(first[i].body)["outputs"][0]["data"].get<std::vector<float>>(),
              (std::vector<float>{x, x + 1, x + 2}))
        << i;
  }
  EXPECT_EQ(
      metric(served.server.metrics_text(), "hal_instance_healthy{model=\"sum\",device=\"cpu:0\"}"),
      1);
  // Two requests never make the preferred 3: batched, they would wait out the 10 s delay.
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Answer> second =
      post_at_once(port, "/v2/models/sum/infer", {row_body(2), row_body(3)});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  for (const Answer& answer : second) EXPECT_EQ(answer.status, 200) << answer.body;
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(metric(text, "hal_batch_size_count{model=\"sum\"}"), 5) << text;
  EXPECT_EQ(metric(text, "hal_batch_size_sum{model=\"sum\"}"), 5) << text;
}

// x[batch, n] -> Relu -> y[batch, n] on a sim device of 4 MiB (HAL_SIM_CONFIG, set by CTest).
TEST(ServeRequestFaults, ARequestPastTheDevicesMemoryLeavesTheInstanceInRotation) {
  const std::vector<Device> sims = backend_devices("sim");
  if (sims.size() != 1 || sims[0].info().memory_total.bytes > (8u << 20))
    GTEST_SKIP() << "needs HAL_SIM_CONFIG=devices=1,memory=4194304";
  TempDir dir;
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {"batch", "n"});
  b.output("y", onnx::TensorProto::FLOAT, {"batch", "n"});
  b.node("Relu", {"x"}, {"y"});
  ServedModel served(options_for("relu", dir.write("relu.onnx", b.bytes()), {"sim:0"}));
  // 2 Mi floats (8 MiB) as binary data: more than the device holds.
  constexpr int64_t kLarge = int64_t{1} << 21;
  const json header = {{"inputs",
                        {{{"name", "x"},
                          {"shape", {1, kLarge}},
                          {"datatype", "FP32"},
                          {"parameters", {{"binary_data_size", kLarge * 4}}}}}}};
  const std::string text = header.dump();
  httplib::Headers headers{{"Inference-Header-Content-Length", std::to_string(text.size())}};
  auto large = served.client->Post("/v2/models/relu/infer", headers,
                                   text + std::string(static_cast<size_t>(kLarge) * 4, '\0'),
                                   "application/octet-stream");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 400) << large->body;
  EXPECT_NE(json::parse(large->body).value("error", "").find("model 'relu'"), std::string::npos)
      << large->body;
  EXPECT_EQ(served.client->Get("/v2/models/relu/ready")->status, 200);
  auto small = served.client->Post(
      "/v2/models/relu/infer",
      json({{"inputs",
             {{{"name", "x"}, {"shape", {1, 3}}, {"datatype", "FP32"}, {"data", {-1, 2, -3}}}}}})
          .dump(),
      "application/json");
  ASSERT_TRUE(small);
  ASSERT_EQ(small->status, 200) << small->body;
  EXPECT_EQ(json::parse(small->body)["outputs"][0]["data"].get<std::vector<float>>(),
            (std::vector<float>{0, 2, 0}));
}

}  // namespace
}  // namespace hal::test
