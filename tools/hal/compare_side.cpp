#include "compare_side.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "hal/trace.hpp"
#include "json_text.hpp"
#include "trace_files.hpp"

extern char** environ;

namespace hal::tool {
namespace {

// The spans whose starts align the child's trace with this process's: this process's around the
// child's start, and the child's around its whole service.
constexpr const char* kStartSpan = "hal compare: start side B";
constexpr const char* kWorkerSpan = "hal compare-worker: side B";

uint64_t steady_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

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
  ChildSide(const std::string& id, const WorkloadSpec& spec, const std::vector<std::string>& env,
            ChildTrace* trace)
      : what_("side B (" + id + " in a child process with " + join(env) + ")") {
    if (trace) trace->parent_anchor_ns = steady_now_ns();
    const hal::trace::Scope starting(kStartSpan);
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
    std::vector<std::string> given = env;
    if (trace) given.push_back("HAL_TRACE=" + trace->file.string());  // not this process's file
    std::vector<std::string> environment = merged_environment(given);
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
    // "ok ANCHOR" once the workload's inputs are made: ANCHOR is the child's kWorkerSpan start.
    const std::string started = expect_ok(answer());
    if (trace) trace->child_anchor_ns = std::strtoull(started.c_str(), nullptr, 10);
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

// `event`'s string `key`, or "" (metadata events have no category, flows no arguments).
std::string text_of(const nlohmann::ordered_json& event, const char* key) {
  const auto found = event.find(key);
  return found != event.end() && found->is_string() ? found->get<std::string>() : std::string();
}

// The start (microseconds into its trace) of `trace`'s span `name`.
double span_start(const nlohmann::ordered_json& trace, const char* name,
                  const std::filesystem::path& file) {
  for (const nlohmann::ordered_json& event : trace["traceEvents"]) {
    const auto ts = event.find("ts");
    if (text_of(event, "ph") == "X" && text_of(event, "name") == name && ts != event.end() &&
        ts->is_number())
      return ts->get<double>();
  }
  throw Error(ErrorCode::InvalidArgument,
              "trace: " + file.string() + " has no '" + name + "' span to align side B's trace by");
}

}  // namespace

std::unique_ptr<CompareSide> local_side(const std::string& device_id, const WorkloadSpec& spec) {
  return std::make_unique<LocalSide>(device_id, spec);
}

std::unique_ptr<CompareSide> child_side(const std::string& device_id, const WorkloadSpec& spec,
                                        const std::vector<std::string>& environment,
                                        ChildTrace* trace) {
  return std::make_unique<ChildSide>(device_id, spec, environment, trace);
}

void merge_child_trace(const ChildTrace& trace, const std::filesystem::path& into) {
  if (trace.parent_anchor_ns == 0 || trace.child_anchor_ns == 0)
    throw Error(ErrorCode::InvalidArgument,
                "trace: side B gave no clock reading to align " + trace.file.string() + " by");
  nlohmann::ordered_json merged = read_trace(into), child = read_trace(trace.file);
  // A child's time, in microseconds from its anchor span, is on steady_clock the child's anchor
  // plus that; this process's anchor span began parent_anchor_ns on the same clock.
  const int64_t apart_ns = static_cast<int64_t>(trace.child_anchor_ns - trace.parent_anchor_ns);
  const double shift = span_start(merged, kStartSpan, into) -
                       span_start(child, kWorkerSpan, trace.file) +
                       static_cast<double>(apart_ns) / 1e3;
  nlohmann::ordered_json& events = merged["traceEvents"];
  for (nlohmann::ordered_json& event : child["traceEvents"]) {
    if (const auto ts = event.find("ts"); ts != event.end() && ts->is_number())
      *ts = ts->get<double>() + shift;
    if (text_of(event, "name") == "process_name")
      event["args"] = {{"name", "hal compare-worker (side B)"}};
    events.push_back(std::move(event));
  }
  merged["otherData"]["dropped_events"] = dropped_events(merged) + dropped_events(child);
  const std::string text = merged.dump(-1, ' ', false, kReplaceBadUtf8);
  std::ofstream out(into);
  out << text << "\n";
  out.close();
  if (!out) throw Error(ErrorCode::InvalidArgument, "trace: cannot write " + into.string());
  std::error_code ignored;  // a stray copy of B's spans is no failure of the comparison
  std::filesystem::remove(trace.file, ignored);
}

void serve_compare_side(const std::string& device_id, const WorkloadSpec& spec) {
  const uint64_t anchor = steady_now_ns();  // sent to the parent: merge_child_trace
  const hal::trace::Scope serving(kWorkerSpan);
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
  std::printf("ok %llu\n", static_cast<unsigned long long>(anchor));
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
