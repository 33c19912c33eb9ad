// `hal bench SUITE [--json] [Google Benchmark flags]`: runs one of hal's benchmark suites,
// which live in their own executables (built on Google Benchmark), next to `hal` in a build
// tree or under libexec/hal in an install.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "hal/error.hpp"

namespace hal::tool {
namespace {

const char* const kSuites[] = {"stream", "thread_pool", "memory", "dispatch", "copy", "ops"};

std::filesystem::path find_suite(const std::string& suite) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string name = "hal_bench_" + suite;
  for (const auto& candidate :
       {self.parent_path() / name, self.parent_path() / ".." / "libexec" / "hal" / name})
    if (std::filesystem::exists(candidate)) return candidate;
  throw Error(ErrorCode::NotFound, "benchmark suite '" + suite + "' is not installed: " + name +
                                       " is neither next to " + self.string() +
                                       " nor in ../libexec/hal");
}

void run(const std::string& suite, bool json, const std::string& device,
         const std::vector<std::string>& extra) {
  bool known = false;
  for (const char* name : kSuites) known = known || suite == name;
  if (!known)
    throw Error(ErrorCode::InvalidArgument,
                "no benchmark suite '" + suite +
                    "'; the suites are stream, thread_pool, memory, dispatch, copy, ops");
  const std::string path = find_suite(suite).string();
  std::vector<std::string> arguments{path};
  if (json) arguments.emplace_back("--json");
  if (!device.empty()) arguments.push_back("--device=" + device);
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(path.c_str(), argv.data());
  throw Error(ErrorCode::Internal, "could not run " + path + ": " + std::strerror(errno));
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* command = app.add_subcommand("bench",
                                     "Run a benchmark suite (stream, thread_pool, memory, "
                                     "dispatch, copy, ops); figures are ratios to "
                                     "same-run baselines");
  auto suite = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto device = std::make_shared<std::string>();
  command->add_option("suite", *suite, "stream, thread_pool, memory, dispatch, copy or ops")
      ->required();
  command->add_flag("--json", *json, "Print JSON (schema hal.bench/1)");
  command->add_option("--device", *device,
                      "The device to measure (dispatch, copy: opencl:N or cuda:N; ops: any)");
  command->allow_extras();  // passed on to Google Benchmark, e.g. --benchmark_filter=hit
  command->callback(
      [command, suite, json, device] { run(*suite, *json, *device, command->remaining()); });
}

}  // namespace hal::tool
