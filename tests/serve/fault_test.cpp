// A sim device that fails mid-run (HAL_SIM_CONFIG's fail_op_at, set by CTest): its instance
// leaves the rotation, what it held is retried on another instance, every request is answered,
// and readiness says so.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "serve_fixture.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using json = nlohmann::json;

TEST(ServeFault, OneOfTwoDevicesFailsAndEveryRequestIsAnswered) {
  if (backend_devices("sim").size() != 2)
    GTEST_SKIP() << "needs HAL_SIM_CONFIG=devices=2,fail_op_at=...";
  TempDir dir;
  const auto model = dir.write("mlp.onnx", mlp_bytes(4, 8, 3));
  serve::ServerOptions options = options_for("mlp", model, {"sim:0", "sim:1"});
  options.balancer = serve::Balancer::round_robin;  // sim:0 gets every other batch until it fails
  options.models[0].batching.max_batch = 4;
  options.models[0].batching.max_queue_delay_us = 200;
  ServedModel served(options);
  constexpr int kThreads = 8, kEach = 20;
  std::atomic<int> ok{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      for (int i = 0; i < kEach; ++i) {
        const std::vector<float> x = rows_of(1, 4, static_cast<float>(t * kEach + i));
        auto answer =
            c.Post("/v2/models/mlp/infer", infer_body(x, 1, 4).dump(), "application/json");
        if (!answer || answer->status != 200) {
          ++wrong;
          continue;
        }
        const auto y = json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>();
        const auto want = reference(model, x, 1);
        bool same = y.size() == want.size();
        for (size_t k = 0; same && k < y.size(); ++k) same = std::abs(y[k] - want[k]) <= 1e-5f;
        ++(same ? ok : wrong);
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kThreads * kEach);
  EXPECT_EQ(wrong.load(), 0);
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(metric(text, "hal_instance_healthy{model=\"mlp\",device=\"sim:0\"}"), 0) << text;
  EXPECT_EQ(metric(text, "hal_instance_healthy{model=\"mlp\",device=\"sim:1\"}"), 1) << text;
  EXPECT_EQ(served.client->Get("/v2/health/ready")->status, 200);
  auto ready = served.client->Get("/v2/models/mlp/ready");
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(
      json::parse(ready->body)["instances"],
      json::parse(R"([{"device":"sim:0","healthy":false},{"device":"sim:1","healthy":true}])"));
}

TEST(ServeFault, TheOnlyDeviceFailsAndTheModelIsNotReady) {
  if (backend_devices("sim").size() != 1)
    GTEST_SKIP() << "needs HAL_SIM_CONFIG=devices=1,fail_op_at=...";
  TempDir dir;
  const auto model = dir.write("mlp.onnx", mlp_bytes(4, 8, 3));
  serve::ServerOptions options = options_for("mlp", model, {"sim:0"});
  options.models[0].batching.max_queue_delay_us = 0;
  ServedModel served(options);
  const std::string body = infer_body(rows_of(1, 4), 1, 4).dump();
  int failed_at = -1;
  for (int i = 0; i < 20 && failed_at < 0; ++i) {
    auto answer = served.client->Post("/v2/models/mlp/infer", body, "application/json");
    ASSERT_TRUE(answer);
    if (answer->status == 200) continue;
    failed_at = i;
    EXPECT_EQ(answer->status, 503);
    EXPECT_EQ(answer->get_header_value("Retry-After"), "1");
    EXPECT_NE(json::parse(answer->body)["error"].get<std::string>().find(
                  "model 'mlp': the request failed on every instance: "),
              std::string::npos)
        << answer->body;
  }
  ASSERT_GE(failed_at, 0) << "the injected fault never came";
  // Not ready is a 4xx (KServe v2), 400 as Triton answers; 503 would read as overload.
  EXPECT_EQ(served.client->Get("/v2/health/ready")->status, 400);
  auto ready = served.client->Get("/v2/models/mlp/ready");
  EXPECT_EQ(ready->status, 400);
  EXPECT_EQ(json::parse(ready->body)["ready"], false);
  auto refused = served.client->Post("/v2/models/mlp/infer", body, "application/json");
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(json::parse(refused->body)["error"], "model 'mlp' has no healthy instance");
  EXPECT_EQ(served.client->Get("/v2/health/live")->status, 200);
}

}  // namespace
}  // namespace hal::test
