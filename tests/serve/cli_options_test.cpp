// `hal serve` and `hal loadgen` refuse option values they cannot honour, naming the option,
// before anything is loaded or sent (exit status 1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.hpp"

namespace hal::test {
namespace {

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
           {R"({"port": "80"})", "port \"80\" is not an integer"}}) {
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

}  // namespace
}  // namespace hal::test
