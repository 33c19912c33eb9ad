// `hal serve` and `hal loadgen` refuse option values they cannot honour, naming the option,
// before anything is loaded or sent (exit status 1); `hal serve` stopped by signals: the drain
// deadline, a second signal, an idle keep-alive connection.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "serve_fixture.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using json = nlohmann::json;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What `hal serve` children get in their environment: a paced sim device of their own (a
// request of mlp_bytes(64, 64, 8) takes about 0.3 s on sim:0), so that requests still wait when a
// signal comes; under ASan, the options child_sanitizer_options() gives a shell.
std::vector<std::string> child_environment() {
  std::vector<std::string> environment = {
      "HAL_SIM_CONFIG=devices=1,pace=1,gflops=0.00003,launch_us=10"};
#if defined(__SANITIZE_ADDRESS__)
  const char* asan = std::getenv("ASAN_OPTIONS");
  environment.push_back(std::string("ASAN_OPTIONS=") + (asan ? asan : "") +
                        ":intercept_tls_get_addr=0");
#endif
  return environment;
}

// `hal serve` of model "slow" on the paced sim:0, one request per batch.
ServeChild slow_serve(const std::filesystem::path& model, std::vector<std::string> options = {}) {
  std::vector<std::string> arguments = {
      "serve",       "--model", "slow=" + model.string(), "--port", "0", "--devices", "sim:0",
      "--max-batch", "1",       "--max-queue-delay-us",   "0"};
  arguments.insert(arguments.end(), options.begin(), options.end());
  return ServeChild(HAL_CLI_PATH, std::move(arguments), child_environment());
}

// One request to model "slow" from each of `clients` threads, sent at once; their answers.
class SlowRequests {
 public:
  SlowRequests(int port, int clients) : statuses_(clients, 0), errors_(clients) {
    for (size_t i = 0; i < statuses_.size(); ++i)
      threads_.emplace_back([this, port, i] {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(std::chrono::seconds(60));
        const std::string body = infer_body(rows_of(1, 64), 1, 64).dump();
        if (auto answer = c.Post("/v2/models/slow/infer", body, "application/json")) {
          statuses_[i] = answer->status;
          const json parsed = json::parse(answer->body, nullptr, false);
          if (parsed.is_object()) errors_[i] = parsed.value("error", std::string());
        }
      });
  }
  ~SlowRequests() { join(); }
  void join() {
    for (auto& thread : threads_)
      if (thread.joinable()) thread.join();
  }
  // After join(): how many were answered `status`, and the error messages of those.
  int count(int status) const {
    return static_cast<int>(std::count(statuses_.begin(), statuses_.end(), status));
  }
  std::vector<std::string> errors(int status) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < statuses_.size(); ++i)
      if (statuses_[i] == status) out.push_back(errors_[i]);
    return out;
  }

 private:
  std::vector<int> statuses_;
  std::vector<std::string> errors_;
  std::vector<std::thread> threads_;
};

// Until `total` requests to model "slow" have reached the server (queued, running or answered
// 200), up to 10 s.
bool arrived(httplib::Client& probe, int total) {
  for (int i = 0; i < 500; ++i) {
    if (auto m = probe.Get("/metrics")) {
      const double in =
          metric(m->body, "hal_requests_in_flight{model=\"slow\"}") +
          std::max(0.0, metric(m->body, "hal_requests_total{model=\"slow\",code=\"200\"}"));
      if (in >= total) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(ServeCli, BadOptionsAreRefusedNamingTheOption) {
  const std::string hal = child_sanitizer_options() + " " + HAL_CLI_PATH;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"serve", "hal serve: no model given (--model NAME=PATH.onnx)"},
      {"serve --model x", "--model 'x': expected NAME=PATH.onnx"},
      {"serve --model m=a.onnx --balancer fastest",
       "--balancer 'fastest': expected predicted, round-robin or least-outstanding"},
      {"serve --model m=a.onnx --max-batch 0", "--max-batch: '0' is out of range (1 to 65536)"},
      {"serve --model m=a.onnx --preferred-batch-sizes 4,16",
       "--preferred-batch-sizes: '16' is out of range (1 to 8)"},
      {"serve --model m=a.onnx --port 70000", "--port: '70000' is out of range (0 to 65535)"},
      {"serve --model m=a.onnx --max-queue 0", "--max-queue: '0' is out of range (1 to 1000000)"},
      {"serve --model m=a.onnx --priority-levels 17",
       "--priority-levels: '17' is out of range (1 to 16)"},
      {"serve --model m=/nonexistent/a.onnx --port 0", "/nonexistent/a.onnx"},
      {"serve --config /nonexistent/c.json --port 0",
       "--config /nonexistent/c.json: cannot read the file"},
      {"loadgen --model m --rate 5 --concurrency 2",
       "--rate and --concurrency: give one or the other"},
      {"loadgen --model m --duration 10x", "--duration: '10x' is not a number"},
      {"loadgen --model m --concurrency 0", "--concurrency: '0' is out of range (1 to 4096)"},
      {"loadgen --model m --input x", "--input 'x': expected NAME=FILE.npy"},
      {"loadgen --model m --url ftp://h:1 --duration 1s",
       "--url 'ftp://h:1': expected http://HOST:PORT"},
  };
  for (const auto& [arguments, message] : cases) {
    const ShellResult result = run_shell(hal + " " + arguments + " 2>&1");
    EXPECT_EQ(result.status, 1) << arguments << "\n" << result.output;
    EXPECT_NE(result.output.find(message), std::string::npos) << arguments << "\n" << result.output;
  }
  // A config file's numbers are checked as the options are: 2^32 does not wrap to port 0.
  const std::string config =
      std::filesystem::temp_directory_path() / ("hal_serve_cli_" + std::to_string(getpid()));
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"port": 4294967296})", "port 4294967296 is out of range (0 to 65535)"},
           {R"({"http_threads": 0})", "http_threads 0 is out of range (1 to 4096)"},
           {R"({"port": "80"})", "port \"80\" is not an integer"},
           // A model's numbers too: 16.9 is not taken as 16.
           {R"({"models": [{"name": "m", "path": "a.onnx", "max_batch": 16.9}]})",
            "models['m'].max_batch 16.9 is not an integer"},
           {R"({"models": [{"name": "m", "path": "a.onnx", "priority_levels": 2.5}]})",
            "models['m'].priority_levels 2.5 is not an integer"},
           {R"({"models": [{"name": "m", "path": "a.onnx", "preferred_batch_sizes": [2, 1.5]}]})",
            "models['m'].preferred_batch_sizes[] 1.5 is not an integer"},
           {R"({"models": [{"name": "m", "path": "a.onnx", "preferred_batch_sizes": 4}]})",
            "models['m'].preferred_batch_sizes 4 is not a list"}}) {
    std::ofstream(config) << text;
    const ShellResult result =
        run_shell(hal + " serve --model m=/nonexistent/a.onnx --config " + config + " 2>&1");
    EXPECT_EQ(result.status, 1) << text << "\n" << result.output;
    EXPECT_NE(result.output.find("--config " + config + ": " + message), std::string::npos)
        << text << "\n"
        << result.output;
  }
  std::filesystem::remove(config);
}

// At --drain-timeout-s the requests still waiting are answered 503 and the server exits soon
// after (1, as some went unserved), rather than serving the whole queue first; while it drains
// it is not ready (400).
TEST(ServeCli, TheDrainDeadlineAnswersWhatStillWaits503) {
  TempDir dir;
  ServeChild serve =
      slow_serve(dir.write("slow.onnx", mlp_bytes(64, 64, 8)), {"--drain-timeout-s", "1"});
  ASSERT_GT(serve.port, 0) << serve.output;
  // A connection a request: an idle keep-alive one would hold the exit for httplib's 5 s, and
  // Client::stop() unlocks, inlined here, a mutex that libcpp-httplib.so (uninstrumented) locked,
  // which ThreadSanitizer reports as an unlock of an unlocked mutex.
  httplib::Client probe("127.0.0.1", serve.port);
  probe.set_keep_alive(false);
  probe.set_read_timeout(std::chrono::seconds(10));
  const auto alone = std::chrono::steady_clock::now();
  auto first = probe.Post("/v2/models/slow/infer", infer_body(rows_of(1, 64), 1, 64).dump(),
                          "application/json");
  const double one_s = seconds_since(alone);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  ASSERT_GT(one_s, 0.1) << "sim:0 is not paced";
  constexpr int kClients = 20;  // about 6 s of work
  SlowRequests requests(serve.port, kClients);
  ASSERT_TRUE(arrived(probe, kClients + 1)) << serve.output;
  const auto signalled = std::chrono::steady_clock::now();
  serve.send_signal(SIGTERM);
  int ready = 200;
  for (int i = 0; i < 50 && ready == 200; ++i) {  // until the drain starts (well within its 1 s)
    auto answer = probe.Get("/v2/health/ready");
    ready = answer ? answer->status : 0;
    if (ready == 200) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ready, 400);
  auto model_ready = probe.Get("/v2/models/slow/ready");
  ASSERT_TRUE(model_ready);
  EXPECT_EQ(model_ready->status, 400);
  const int status = serve.wait_exit();
  const double exit_s = seconds_since(signalled);
  requests.join();
  EXPECT_EQ(status, 1) << serve.output;
  // The deadline and the batch running then; not the queue.
  EXPECT_LT(exit_s, 1 + 4 * one_s + 0.5) << serve.output;
  EXPECT_EQ(requests.count(200) + requests.count(503), kClients);
  EXPECT_GE(requests.count(503), 1);
  for (const std::string& error : requests.errors(503))
    EXPECT_EQ(error, "the server stopped before model 'slow' answered the request");
  EXPECT_NE(serve.output.find("requests still waiting at the drain deadline (--drain-timeout-s "
                              "1) were answered 503; stopped"),
            std::string::npos)
      << serve.output;
}

// A second SIGTERM or SIGINT during the drain (`timeout` signals the child and its group) is
// ignored: the drain goes on and every request is answered.
TEST(ServeCli, ASecondSignalDuringTheDrainIsIgnored) {
  TempDir dir;
  ServeChild serve = slow_serve(dir.write("slow.onnx", mlp_bytes(64, 64, 8)));
  ASSERT_GT(serve.port, 0) << serve.output;
  httplib::Client probe("127.0.0.1", serve.port);
  probe.set_read_timeout(std::chrono::seconds(10));
  constexpr int kClients = 6;  // about 1.8 s of work
  SlowRequests requests(serve.port, kClients);
  ASSERT_TRUE(arrived(probe, kClients)) << serve.output;
  serve.send_signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  serve.send_signal(SIGTERM);
  serve.send_signal(SIGINT);
  EXPECT_EQ(serve.wait_exit(), 0) << serve.output;
  requests.join();
  EXPECT_EQ(requests.count(200), kClients);
  EXPECT_NE(serve.output.find("hal serve: already draining; the signal is ignored"),
            std::string::npos)
      << serve.output;
  EXPECT_NE(serve.output.find("every request answered; stopped"), std::string::npos)
      << serve.output;
}

}  // namespace
}  // namespace hal::test
