// On a paced fleet of sim devices of speeds 1:1:2:4 (HAL_SIM_CONFIG set by CTest): the
// predicted balancer gives the fast devices more work, priority levels order the queue, and
// `hal serve` drains on SIGTERM with every request in flight answered.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "serve_fixture.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using json = nlohmann::json;

constexpr int64_t kIn = 64, kHidden = 256, kOut = 64;

std::vector<std::string> fleet() {
  std::vector<std::string> ids;
  for (const Device& d : backend_devices("sim")) ids.push_back(d.id());
  return ids;
}

bool paced_fleet() { return fleet().size() == 4; }

// Polls `done` every 5 ms for up to 20 s.
template <class Done>
bool eventually(Done&& done) {
  for (int i = 0; i < 4000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

TEST(ServeFleet, PredictedSendsMoreWorkToFasterDevices) {
  if (!paced_fleet()) GTEST_SKIP() << "needs the paced fleet of 4 sim devices (ctest -L serve)";
  TempDir dir;
  const auto model = dir.write("mlp.onnx", mlp_bytes(kIn, kHidden, kOut));
  serve::ServerOptions options = options_for("mlp", model, fleet());
  options.models[0].batching.max_batch = 4;
  options.models[0].batching.max_queue_delay_us = 1000;
  ServedModel served(options);
  constexpr int kThreads = 6, kEach = 8;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      for (int i = 0; i < kEach; ++i) {
        auto answer = c.Post("/v2/models/mlp/infer", infer_body(rows_of(1, kIn), 1, kIn).dump(),
                             "application/json");
        if (answer && answer->status == 200) ++ok;
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kThreads * kEach);
  const std::string text = served.server.metrics_text();
  auto rows = [&](const std::string& id) {
    return std::max(0.0,
                    metric(text, "hal_instance_rows_total{model=\"mlp\",device=\"" + id + "\"}"));
  };
  // sim:0 and sim:1 are the slow pair, sim:3 is four times faster.
  EXPECT_GT(rows("sim:3"), rows("sim:0")) << text;
  EXPECT_GT(rows("sim:3"), rows("sim:1")) << text;
  EXPECT_EQ(rows("sim:0") + rows("sim:1") + rows("sim:2") + rows("sim:3"), kThreads * kEach);
}

// A request of the first priority level overtakes the queued requests of the second.
TEST(ServeFleet, AHigherPriorityRequestOvertakesTheQueue) {
  if (!paced_fleet()) GTEST_SKIP() << "needs the paced fleet of 4 sim devices (ctest -L serve)";
  TempDir dir;
  const auto model = dir.write("mlp.onnx", mlp_bytes(kIn, kHidden, kOut));
  serve::ServerOptions options = options_for("mlp", model, {"sim:0"});
  options.models[0].batching.max_batch = 8;
  options.models[0].batching.max_batches_per_instance = 1;
  options.models[0].batching.max_queue_delay_us = 0;
  ServedModel served(options);
  std::mutex mutex;
  std::vector<std::string> finished;
  auto send = [&](const std::string& label, int64_t rows, int priority) {
    return std::thread([&, label, rows, priority] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      json body = infer_body(rows_of(rows, kIn), rows, kIn);
      body["parameters"] = {{"priority", priority}};
      auto answer = c.Post("/v2/models/mlp/infer", body.dump(), "application/json");
      std::lock_guard lock(mutex);
      finished.push_back(answer && answer->status == 200 ? label : label + " failed");
    });
  };
  auto depth = [&] {
    return metric(served.server.metrics_text(), "hal_queue_depth{model=\"mlp\"}");
  };
  auto in_flight = [&] {
    return metric(served.server.metrics_text(), "hal_requests_in_flight{model=\"mlp\"}");
  };
  std::vector<std::thread> threads;
  threads.push_back(send("A", 8, 2));  // occupies the device (8 rows: a full batch)
  ASSERT_TRUE(eventually([&] { return in_flight() == 1 && depth() == 0; }));
  for (const char* label : {"B1", "B2", "B3"}) {
    threads.push_back(send(label, 8, 2));
    const double want = label[1] - '0';
    ASSERT_TRUE(eventually([&] { return in_flight() >= want + 1; }));
  }
  threads.push_back(send("H", 1, 1));
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(finished.size(), 5u);
  // Without priorities H, the newest, would finish last; it may follow one B that started
  // before it came, never more.
  const auto h = std::find(finished.begin(), finished.end(), "H");
  ASSERT_NE(h, finished.end()) << "H failed";
  EXPECT_LE(h - finished.begin(), 2) << "finished: " << testing::PrintToString(finished);
}

// A batch waiting behind a running one takes the requests that come while it waits: with no
// delay, B leaves the queue at once as a batch of 1 behind A, and C, D, E join it there instead
// of forming a third batch after it (2 batches in all, not 3).
TEST(ServeFleet, ABatchWaitingForItsInstanceTakesTheRequestsThatCome) {
  if (!paced_fleet()) GTEST_SKIP() << "needs the paced fleet of 4 sim devices (ctest -L serve)";
  TempDir dir;
  const auto model = dir.write("mlp.onnx", mlp_bytes(kIn, kHidden, kOut));
  serve::ServerOptions options = options_for("mlp", model, {"sim:0"});  // 8 rows: ~260 ms
  options.models[0].batching.max_batch = 8;
  options.models[0].batching.max_batches_per_instance = 2;
  options.models[0].batching.max_queue_delay_us = 0;
  ServedModel served(options);
  std::atomic<int> ok{0};
  auto send = [&](int64_t rows) {
    return std::thread([&, rows] {
      httplib::Client c("127.0.0.1", served.server.port());
      c.set_read_timeout(std::chrono::seconds(60));
      const std::vector<float> x = rows_of(rows, kIn);
      auto answer =
          c.Post("/v2/models/mlp/infer", infer_body(x, rows, kIn).dump(), "application/json");
      if (answer && answer->status == 200 &&
          json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>().size() ==
              static_cast<size_t>(rows * kOut))
        ++ok;
    });
  };
  auto metric_now = [&](const std::string& name) {
    return metric(served.server.metrics_text(), name + "{model=\"mlp\"}");
  };
  std::vector<std::thread> threads;
  threads.push_back(send(8));  // A: a full batch, running
  ASSERT_TRUE(eventually([&] { return metric_now("hal_requests_in_flight") == 1; }));
  threads.push_back(send(1));  // B: a batch of its own, waiting behind A
  ASSERT_TRUE(eventually([&] {
    return metric_now("hal_requests_in_flight") == 2 && metric_now("hal_queue_depth") == 0;
  }));
  for (int i = 0; i < 3; ++i) threads.push_back(send(1));  // C, D, E: into B's batch
  ASSERT_TRUE(eventually([&] {
    return metric_now("hal_requests_in_flight") == 5 && metric_now("hal_queue_depth") == 0;
  })) << served.server.metrics_text();
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 5);
  const std::string text = served.server.metrics_text();
  EXPECT_EQ(metric(text, "hal_batch_size_count{model=\"mlp\"}"), 2) << text;
  EXPECT_EQ(metric(text, "hal_batch_size_sum{model=\"mlp\"}"), 12) << text;
}

// Starts `hal serve` with `arguments`; reads the port from its first line.
struct ServeProcess {
  pid_t pid = -1;
  int out = -1;
  int port = -1;
  std::string output;

  explicit ServeProcess(std::vector<std::string> arguments) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(pipe_fds[1], STDOUT_FILENO);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      std::vector<char*> argv;
      static std::string program = HAL_CLI_PATH;
      argv.push_back(program.data());
      for (auto& a : arguments) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(program.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(pipe_fds[1]);
    out = pipe_fds[0];
    // The first line, within 60 s (loading the model and a first run on each device).
    for (int chunks = 0; chunks < 64 && output.find('\n') == std::string::npos && read_some(60'000);
         ++chunks) {
    }
    const size_t colon = output.find("127.0.0.1:");
    if (colon != std::string::npos) port = std::stoi(output.substr(colon + 10));
  }
  bool read_some(int timeout_ms) {
    pollfd p{out, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char chunk[512];
    const ssize_t n = ::read(out, chunk, sizeof chunk);
    if (n <= 0) return false;
    output.append(chunk, static_cast<size_t>(n));
    return true;
  }
  // The exit status, waiting up to 60 s (then the process is killed: -1).
  int wait_exit() {
    for (int i = 0; i < 6000; ++i) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        for (int chunks = 0; chunks < 1024 && read_some(100); ++chunks) {
        }
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  ~ServeProcess() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out >= 0) ::close(out);
  }
};

TEST(ServeFleet, SigtermDrainsEveryRequestInFlight) {
  if (!paced_fleet()) GTEST_SKIP() << "needs the paced fleet of 4 sim devices (ctest -L serve)";
  TempDir dir;
  const auto model = dir.write("mlp.onnx", mlp_bytes(kIn, kHidden, kOut));
  ServeProcess serve({"serve", "--model", "mlp=" + model.string(), "--devices", "sim:0", "--port",
                      "0", "--max-batch", "8", "--max-queue-delay-us", "0"});
  ASSERT_GT(serve.port, 0) << serve.output;
  httplib::Client probe("127.0.0.1", serve.port);
  probe.set_read_timeout(std::chrono::seconds(10));
  constexpr int kClients = 5;
  std::atomic<int> ok{0}, wrong{0};
  const std::vector<float> x = rows_of(8, kIn);
  const std::vector<float> want = reference(model, x, 8);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&] {
      httplib::Client c("127.0.0.1", serve.port);
      c.set_read_timeout(std::chrono::seconds(60));
      auto answer =
          c.Post("/v2/models/mlp/infer", infer_body(x, 8, kIn).dump(), "application/json");
      if (!answer || answer->status != 200) return void(++wrong);
      const auto y = json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>();
      bool same = y.size() == want.size();
      for (size_t k = 0; same && k < y.size(); ++k)
        same = std::abs(y[k] - want[k]) <= 1e-3f * (1 + std::abs(want[k]));
      ++(same ? ok : wrong);
    });
  // Every request in flight (each a full batch of 8 rows, about 260 ms of the slow device's time).
  ASSERT_TRUE(eventually([&] {
    auto m = probe.Get("/metrics");
    return m && metric(m->body, "hal_requests_in_flight{model=\"mlp\"}") == kClients;
  }));
  ASSERT_EQ(::kill(serve.pid, SIGTERM), 0);
  for (auto& client : clients) client.join();
  EXPECT_EQ(serve.wait_exit(), 0) << serve.output;
  EXPECT_EQ(ok.load(), kClients);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_NE(serve.output.find("hal serve: SIGTERM: draining"), std::string::npos) << serve.output;
  EXPECT_NE(serve.output.find("every request answered; stopped"), std::string::npos)
      << serve.output;
}

// --config: two models, each with its own devices and batching; the command line's --port wins.
TEST(ServeCli, AConfigFileServesItsModels) {
  TempDir dir;
  const auto a = dir.write("a.onnx", mlp_bytes(4, 8, 3));
  const auto b = dir.write("b.onnx", mlp_bytes(kIn, 16, 2));
  const json config = {
      {"port", 1},  // replaced by --port 0
      {"balancer", "least-outstanding"},
      {"models",
       {{{"name", "a"}, {"path", a.string()}, {"max_batch", 4}},  // on --devices
        {{"name", "b"}, {"path", b.string()}, {"priority_levels", 3}, {"devices", {"cpu:0"}}}}}};
  const auto file = dir.write("serve.json", config.dump());
  ServeProcess serve(
      {"serve", "--config", file.string(), "--port", "0", "--devices", "cpu:0,sim:0"});
  ASSERT_GT(serve.port, 0) << serve.output;
  EXPECT_NE(serve.output.find("balancer least-outstanding"), std::string::npos) << serve.output;
  httplib::Client c("127.0.0.1", serve.port);
  c.set_read_timeout(std::chrono::seconds(60));
  EXPECT_EQ(json::parse(c.Get("/v2/models/a")->body)["parameters"]["max_batch_size"], 4);
  EXPECT_EQ(json::parse(c.Get("/v2/models/b")->body)["outputs"][0]["shape"], json({-1, 2}));
  // A model without "devices" runs on --devices; one with its own list on that.
  EXPECT_EQ(
      json::parse(c.Get("/v2/models/a/ready")->body)["instances"],
      json::parse(R"([{"device":"cpu:0","healthy":true},{"device":"sim:0","healthy":true}])"));
  EXPECT_EQ(json::parse(c.Get("/v2/models/b/ready")->body)["instances"],
            json::parse(R"([{"device":"cpu:0","healthy":true}])"));
  const std::vector<float> x = rows_of(2, 4);
  auto answer = c.Post("/v2/models/a/infer", infer_body(x, 2, 4).dump(), "application/json");
  ASSERT_EQ(answer->status, 200) << answer->body;
  const auto y = json::parse(answer->body)["outputs"][0]["data"].get<std::vector<float>>();
  const auto want = reference(a, x, 2);
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5f);
  json high = infer_body(rows_of(1, kIn), 1, kIn);
  high["parameters"] = {{"priority", 3}};  // b has 3 levels, a has the default 2
  EXPECT_EQ(c.Post("/v2/models/b/infer", high.dump(), "application/json")->status, 200);
  high["inputs"][0]["shape"] = {1, 4};
  high["inputs"][0]["data"] = rows_of(1, 4);
  EXPECT_EQ(c.Post("/v2/models/a/infer", high.dump(), "application/json")->status, 400);
  ASSERT_EQ(::kill(serve.pid, SIGTERM), 0);
  EXPECT_EQ(serve.wait_exit(), 0) << serve.output;
}

}  // namespace
}  // namespace hal::test
