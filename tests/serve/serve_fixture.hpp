// What the serving tests share: a small MLP written as an ONNX file (built with ONNX's own
// protobuf classes), a server on a free port of 127.0.0.1 with an HTTP client beside it, the
// model's reference outputs from running it in process, and `hal serve` as a child process.
#pragma once

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hal/model.hpp"
#include "hal/registry.hpp"
#include "hal/serve.hpp"
#include "model_builder.hpp"

namespace hal::test {

// x[batch, in] -> MatMul -> Add -> Relu -> MatMul -> y[batch, out]; weights from a formula.
// `batch` names the first dimension ("batch": requests stack) or fixes it ("2": they do not).
inline std::string mlp_bytes(int64_t in, int64_t hidden, int64_t out,
                             const std::string& batch = "batch") {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {batch, std::to_string(in)});
  b.output("y", onnx::TensorProto::FLOAT, {batch, std::to_string(out)});
  std::vector<float> w1, b1, w2;
  for (int64_t i = 0; i < in * hidden; ++i)
    w1.push_back(static_cast<float>((i * 7 % 13) - 6) / 8.0f);
  for (int64_t i = 0; i < hidden; ++i) b1.push_back(static_cast<float>(i % 5) / 4.0f - 0.5f);
  for (int64_t i = 0; i < hidden * out; ++i)
    w2.push_back(static_cast<float>((i * 5 % 11) - 5) / 8.0f);
  b.initializer("W1", {in, hidden}, w1)
      .initializer("B1", {hidden}, b1)
      .initializer("W2", {hidden, out}, w2);
  b.node("MatMul", {"x", "W1"}, {"h"});
  b.node("Add", {"h", "B1"}, {"h2"});
  b.node("Relu", {"h2"}, {"h3"});
  b.node("MatMul", {"h3", "W2"}, {"y"});
  return b.bytes();
}

// y[batch, 2] = x[batch, 2] - w, where w[2] is an optional input (IR 8): its initializer
// [1, 2] is the default a request may replace.
inline std::string optional_weight_bytes() {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {"batch", "2"});
  b.input("w", onnx::TensorProto::FLOAT, {"2"});
  b.output("y", onnx::TensorProto::FLOAT, {"batch", "2"});
  b.initializer("w", {2}, {1, 2});
  b.node("Sub", {"x", "w"}, {"y"});
  return b.bytes();
}

// A folder of its own for the test's files, removed afterwards.
class TempDir {
 public:
  TempDir()
      : path_(
            std::filesystem::temp_directory_path() /
            ("hal_serve_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path_ / name, std::ios::binary) << bytes;
    return path_ / name;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

// Rows of x with distinct values: row r, column c holds (r * 3 + c) / 4 - 1 + seed.
inline std::vector<float> rows_of(int64_t rows, int64_t columns, float seed = 0) {
  std::vector<float> x;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c)
      x.push_back(static_cast<float>(r * 3 + c) / 4.0f - 1.0f + seed);
  return x;
}

// The model run in process on cpu:0: the reference every answer is checked against.
inline std::vector<float> reference(const std::filesystem::path& model_path,
                                    const std::vector<float>& x, int64_t rows) {
  const Model model = load_onnx(model_path);
  Stream stream = device("cpu:0").create_stream();
  const int64_t columns = static_cast<int64_t>(x.size()) / rows;
  const auto outputs = model.run({{"x", from_vector(x, {rows, columns}, stream)}}, stream);
  return outputs.at("y").to_vector<float>(stream);
}

// A served model and a client of the server, which listens on a free port of 127.0.0.1.
struct ServedModel {
  explicit ServedModel(serve::ServerOptions options) : server(std::move(options)) {
    server.start();
    client = std::make_unique<httplib::Client>("127.0.0.1", server.port());
    client->set_read_timeout(std::chrono::seconds(60));
    client->set_tcp_nodelay(true);
  }
  serve::Server server;
  std::unique_ptr<httplib::Client> client;
};

inline serve::ServerOptions options_for(const std::string& name, const std::filesystem::path& path,
                                        std::vector<std::string> devices = {"cpu:0"}) {
  serve::ServerOptions options;
  options.port = 0;
  options.http_threads = 32;
  serve::ModelConfig model;
  model.name = name;
  model.path = path;
  model.devices = std::move(devices);
  options.models.push_back(model);
  return options;
}

inline nlohmann::json infer_body(const std::vector<float>& x, int64_t rows, int64_t columns) {
  return {
      {"inputs", {{{"name", "x"}, {"shape", {rows, columns}}, {"datatype", "FP32"}, {"data", x}}}}};
}

// `hal serve` (`program`, the test's HAL_CLI_PATH) run as a child process with `environment`
// ("NAME=VALUE", in place of the test's own values of those names); its stdout and stderr
// together in `output`, its port read from its first line ("listening on ...", within 60 s).
class ServeChild {
 public:
  ServeChild(const std::string& program, std::vector<std::string> arguments,
             std::vector<std::string> environment = {}) {
    std::vector<std::string> variables = environment;
    for (char** variable = environ; *variable; ++variable) {
      const std::string text = *variable;
      const std::string name = text.substr(0, text.find('=') + 1);
      bool replaced = false;
      for (const std::string& mine : environment) replaced = replaced || mine.rfind(name, 0) == 0;
      if (!replaced) variables.push_back(text);
    }
    arguments.insert(arguments.begin(), program);
    std::vector<char*> argv, envp;
    for (std::string& a : arguments) argv.push_back(a.data());
    for (std::string& v : variables) envp.push_back(v.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return;
    pid = ::fork();
    if (pid == 0) {  // only async-signal-safe calls until exec: the test has threads
      ::dup2(pipe_fds[1], STDOUT_FILENO);
      ::dup2(pipe_fds[1], STDERR_FILENO);
      ::execve(program.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(pipe_fds[1]);
    out_ = pipe_fds[0];
    const std::string listening = "listening on http://127.0.0.1:";
    for (int i = 0; i < 600 && output.find(listening) == std::string::npos; ++i) read_some(100);
    const size_t at = output.find(listening);
    if (at != std::string::npos) port = std::stoi(output.substr(at + listening.size()));
  }
  ServeChild(const ServeChild&) = delete;
  ServeChild& operator=(const ServeChild&) = delete;
  ~ServeChild() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }

  void send_signal(int number) const { ::kill(pid, number); }
  // Its exit status (128 + the signal that ended it), waiting up to `timeout`; -1 past it.
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (pid > 0 && std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        for (int chunks = 0; chunks < 1024 && read_some(100); ++chunks) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      // Read meanwhile: a full pipe would stop it.
      if (!read_some(10)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  pid_t pid = -1;
  int port = -1;
  std::string output;

 private:
  // Appends what it wrote within `timeout_ms`; whether there was any.
  bool read_some(int timeout_ms) {
    pollfd p{out_, POLLIN, 0};
    if (out_ < 0 || ::poll(&p, 1, timeout_ms) <= 0) return false;
    char chunk[512];
    const ssize_t n = ::read(out_, chunk, sizeof chunk);
    if (n <= 0) return false;
    output.append(chunk, static_cast<size_t>(n));
    return true;
  }
  int out_ = -1;
};

// The value of a Prometheus sample line "NAME{LABELS} VALUE"; -1 where there is none.
inline double metric(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace hal::test
