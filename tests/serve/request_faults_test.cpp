// Requests whose own data fails the model at run time (an index out of range, a size past the
// device's memory): the request that has the fault is answered 400 naming it, the requests it
// was batched with are served, and the instance stays in rotation.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

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

TEST(ServeRequestFaults, ABadRequestInABatchFailsAloneAndTheOthersAreServed) {
  TempDir dir;
  serve::ServerOptions options = options_for("embed", dir.write("embed.onnx", embedding_bytes()));
  options.models[0].batching.max_batch = 8;
  options.models[0].batching.preferred_batch_sizes = {3};  // the three requests go as one batch
  options.models[0].batching.max_queue_delay_us = 5'000'000;
  ServedModel served(options);
  const std::vector<std::pair<int64_t, int64_t>> ids = {{1, 2}, {4, 99}, {7, 0}};
  struct Answer {
    int status = 0;
    std::string body;
  };
  std::vector<Answer> answers(ids.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i)
    threads.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      if (auto answer = c.Post("/v2/models/embed/infer",
                               ids_body(ids[i].first, ids[i].second).dump(), "application/json"))
        answers[i] = {answer->status, answer->body};
    });
  for (auto& thread : threads) thread.join();
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
