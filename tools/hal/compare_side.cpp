#include "compare_side.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

extern char** environ;

namespace hal::tool {
namespace {

class LocalSide final : public CompareSide {
 public:
  LocalSide(const std::string& id, const WorkloadSpec& spec) : runner_(device(id), spec) {}
  double timed_run() override { return runner_.timed_run(); }
  std::vector<float> output() override { return runner_.output(); }

 private:
  WorkloadRunner runner_;
};

ErrorCode code_named(const std::string& name) {
  for (int32_t c = 0; c <= static_cast<int32_t>(ErrorCode::AsyncFailure); ++c)
    if (to_string(static_cast<ErrorCode>(c)) == name) return static_cast<ErrorCode>(c);
  return ErrorCode::Internal;
}

// Speaks to `hal compare-worker` over two pipes, a line per command and per answer.
class ChildSide final : public CompareSide {
 public:
  ChildSide(const std::string& id, const WorkloadSpec& spec, const std::vector<std::string>& env)
      : what_("side B (" + id + " in a child process with " + join(env) + ")") {
    std::signal(SIGPIPE, SIG_IGN);  // a child that died is an error on write, not a signal
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0)
      throw Error(ErrorCode::Internal, what_ + ": pipe: " + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
      posix_spawn_file_actions_addclose(&actions, fd);
    std::vector<std::string> environment = merged_environment(env);
    std::vector<char*> envp;
    for (std::string& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::string self = "/proc/self/exe", command = "compare-worker", device_flag = "--device",
                device_id = id, workload_flag = "--workload", workload = spec.text;
    char* argv[] = {self.data(),      command.data(),       device_flag.data(),
                    device_id.data(), workload_flag.data(), workload.data(),
                    nullptr};
    const int spawned = posix_spawn(&pid_, "/proc/self/exe", &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    to_ = fdopen(to_child[1], "w");
    from_ = fdopen(from_child[0], "r");
    if (spawned != 0 || !to_ || !from_) {
      close();
      throw Error(ErrorCode::Internal, what_ + ": cannot start: " + std::strerror(spawned));
    }
    expect_ok(answer());  // "ok" once the workload's inputs are made
  }
  ~ChildSide() override { close(); }

  double timed_run() override {
    send("run");
    return std::stod(expect_ok(answer()));
  }

  std::vector<float> output() override {
    send("output");
    const size_t count = std::stoull(expect_ok(answer()));
    std::vector<float> values(count);
    if (std::fread(values.data(), sizeof(float), count, from_) != count)
      throw Error(ErrorCode::Internal, what_ + ": its output ended early");
    return values;
  }

 private:
  static std::string join(const std::vector<std::string>& env) {
    std::string out;
    for (const std::string& e : env) out += (out.empty() ? "" : " ") + e;
    return out;
  }
  static std::vector<std::string> merged_environment(const std::vector<std::string>& env) {
    std::vector<std::string> out;
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      bool replaced = false;
      for (const std::string& given : env)
        replaced |= entry.compare(0, given.find('=') + 1, given, 0, given.find('=') + 1) == 0;
      if (!replaced) out.push_back(entry);
    }
    out.insert(out.end(), env.begin(), env.end());
    return out;
  }
  void send(const char* command) {
    if (std::fprintf(to_, "%s\n", command) < 0 || std::fflush(to_) != 0)
      throw Error(ErrorCode::Internal, what_ + ": the child process has gone");
  }
  std::string answer() {
    char line[4096];
    if (!std::fgets(line, sizeof line, from_))
      throw Error(ErrorCode::Internal, what_ + ": the child process ended without an answer");
    std::string text = line;
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  // "ok REST" -> REST; "error CODE MESSAGE" -> hal::Error(CODE, side: MESSAGE).
  std::string expect_ok(const std::string& text) {
    if (text.rfind("ok", 0) == 0) return text.size() > 3 ? text.substr(3) : "";
    if (text.rfind("error ", 0) == 0) {
      const size_t space = text.find(' ', 6);
      throw Error(code_named(text.substr(6, space - 6)),
                  what_ + ": " + (space == std::string::npos ? "" : text.substr(space + 1)));
    }
    throw Error(ErrorCode::Internal, what_ + ": unexpected answer '" + text + "'");
  }
  void close() {
    if (to_) std::fclose(to_);
    if (from_) std::fclose(from_);
    to_ = from_ = nullptr;
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = 0;
    }
  }

  std::string what_;
  pid_t pid_ = 0;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

}  // namespace

std::unique_ptr<CompareSide> local_side(const std::string& device_id, const WorkloadSpec& spec) {
  return std::make_unique<LocalSide>(device_id, spec);
}

std::unique_ptr<CompareSide> child_side(const std::string& device_id, const WorkloadSpec& spec,
                                        const std::vector<std::string>& environment) {
  return std::make_unique<ChildSide>(device_id, spec, environment);
}

void serve_compare_side(const std::string& device_id, const WorkloadSpec& spec) {
  const auto fail = [](const Error& error) {
    std::string message = error.message();
    for (char& c : message)
      if (c == '\n') c = ' ';
    std::printf("error %s %s\n", std::string(to_string(error.code())).c_str(), message.c_str());
    std::fflush(stdout);
  };
  std::unique_ptr<WorkloadRunner> runner;
  try {
    runner = std::make_unique<WorkloadRunner>(device(device_id), spec);
  } catch (const Error& error) {
    fail(error);
    return;
  }
  std::printf("ok\n");
  std::fflush(stdout);
  char line[64];
  while (std::fgets(line, sizeof line, stdin)) {
    try {
      if (std::strcmp(line, "run\n") == 0) {
        std::printf("ok %.17g\n", runner->timed_run());
      } else if (std::strcmp(line, "output\n") == 0) {
        const std::vector<float> values = runner->output();
        std::printf("ok %zu\n", values.size());
        std::fwrite(values.data(), sizeof(float), values.size(), stdout);
      } else {
        std::printf("error InvalidArgument unknown command\n");
      }
    } catch (const Error& error) {
      fail(error);
    }
    std::fflush(stdout);
  }
}

}  // namespace hal::tool
