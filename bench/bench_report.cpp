#include "bench_report.hpp"

#include <benchmark/benchmark.h>
#include <sys/wait.h>

#include <array>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "hal/error.hpp"
#include "hal/registry.hpp"

namespace hal::bench {
namespace {

// Keeps the median (or the only) real time per benchmark, in nanoseconds per iteration.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  explicit CollectingReporter(bool quiet) : quiet_(quiet) {}
  bool ReportContext(const Context& context) override {
    return quiet_ ? true : ConsoleReporter::ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const double ns = run.GetAdjustedRealTime() * to_ns(run.time_unit);
      const auto& id = run.run_name;
      const std::string name =
          id.args.empty() ? id.function_name : id.function_name + "/" + id.args;
      if (run.error_occurred) {
        record_failure(name, run.error_message);  // a suite's own SkipWithError
      } else if (run.run_type == Run::RT_Aggregate) {
        if (run.aggregate_name == "median") medians_[name] = ns;
      } else if (!medians_.count(name) || singles_.count(name)) {
        singles_[name] = ns;
        medians_[name] = ns;
      }
    }
    if (!quiet_) ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, double>& medians() const { return medians_; }

 private:
  static double to_ns(benchmark::TimeUnit unit) {
    switch (unit) {
      case benchmark::kNanosecond:
        return 1;
      case benchmark::kMicrosecond:
        return 1e3;
      case benchmark::kMillisecond:
        return 1e6;
      case benchmark::kSecond:
        return 1e9;
    }
    return 1;
  }
  bool quiet_;
  std::map<std::string, double> medians_;
  std::map<std::string, double> singles_;
};

// (benchmark, message) of each failed benchmark, in the order they failed.
std::vector<std::pair<std::string, std::string>>& failures() {
  static std::vector<std::pair<std::string, std::string>> list;
  return list;
}

// A --device left for run_suite: only the host may be named (see run_suite).
bool host_device_accepted(int& argc, char** argv, const std::string& suite) {
  const std::string device = take_option(argc, argv, "--device", "cpu:0");
  if (device == "cpu:0") return true;
  std::fprintf(stderr,
               "hal bench %s: this suite measures hal on the host and runs on cpu:0; --device %s "
               "does not apply\n",
               suite.c_str(), device.c_str());
  return false;
}

}  // namespace

void record_failure(const std::string& name, const std::string& message) {
  for (const auto& [failed, _] : failures())
    if (failed == name) return;  // the first message is the one that explains
  failures().emplace_back(name, message);
}

std::string take_option(int& argc, char** argv, const std::string& name,
                        const std::string& fallback) {
  std::string value = fallback;
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == name && i + 1 < argc) {
      value = argv[++i];
    } else if (arg.rfind(name + "=", 0) == 0) {
      value = arg.substr(name.size() + 1);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return value;
}

int run_suite(int argc, char** argv, const std::string& suite, const std::string& device,
              const std::vector<Comparison>& comparisons,
              const std::function<std::vector<Figure>()>& measure) {
  if (!host_device_accepted(argc, argv, suite)) return 2;
  bool json = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0)
      json = true;
    else
      args.push_back(argv[i]);
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  CollectingReporter reporter(json);
  // A suite of figures only (models) registers no benchmark, and Google Benchmark would say so.
  if (!comparisons.empty()) benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const auto& medians = reporter.medians();
  std::vector<Figure> figures;
  for (const Comparison& c : comparisons) {
    auto ours = medians.find(c.benchmark);
    auto base = medians.find(c.baseline);
    if (ours == medians.end() || base == medians.end()) continue;  // filtered out
    figures.push_back({c.name, ours->second, "ns", c.baseline, base->second,
                       ours->second / base->second, "lower", c.goal});
  }
  try {
    if (measure)
      for (Figure& figure : measure()) figures.push_back(std::move(figure));
  } catch (const std::exception& error) {
    record_failure("(figures measured after the benchmarks)", error.what());
  }
  const std::vector<std::pair<std::string, std::string>>& errors = failures();

  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  if (!json)
    std::printf("\n%-28s %12s  %-28s %12s %8s  %s\n", "figure", "hal", "baseline", "", "ratio",
                "goal");
  for (const Figure& f : figures) {
    if (json) {
      results.push_back({{"name", f.name},
                         {"value", f.value},
                         {"unit", f.unit},
                         {"baseline", f.baseline},
                         {"baseline_value", f.baseline_value},
                         {"ratio", f.ratio},
                         {"better", f.better},
                         {"goal", f.goal}});
    } else {
      const char* format = f.unit == "ns" ? "%-28s %9.1f %-3s %-28s %9.1f %-3s %7.3f  %s\n"
                                          : "%-28s %9.4g %-3s %-28s %9.4g %-3s %7.3f  %s\n";
      std::printf(format, f.name.c_str(), f.value, f.unit.c_str(), f.baseline.c_str(),
                  f.baseline_value, f.unit.c_str(), f.ratio, f.goal.c_str());
    }
  }
  nlohmann::ordered_json failures = nlohmann::ordered_json::array();
  for (const auto& [benchmark, message] : errors) {
    failures.push_back({{"benchmark", benchmark}, {"message", message}});
    if (!json) std::printf("FAILED %s: %s\n", benchmark.c_str(), message.c_str());
  }
  if (json)
    std::printf("%s\n", nlohmann::ordered_json{{"schema", "hal.bench/1"},
                                               {"suite", suite},
                                               {"device", device},
                                               {"results", results},
                                               {"errors", failures}}
                            .dump(2)
                            .c_str());
  return errors.empty() ? 0 : 1;
}

std::string run_peer(const std::string& command, const std::string& hint) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw Error(ErrorCode::Internal, "cannot run " + command);
  std::string text;
  std::array<char, 4096> chunk;
  while (size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) text.append(chunk.data(), n);
  const int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(ErrorCode::Internal, "the PyTorch peer failed (" + command + "): " + text + hint);
  return text;
}

bool use_sim_fleet(const std::string& suite, const char* config, int devices) {
  setenv("HAL_SIM_CONFIG", config, /*overwrite=*/1);
  try {
    for (int k = 0; k < devices; ++k) hal::device("sim:" + std::to_string(k));
  } catch (const hal::Error& error) {
    std::cerr << "hal bench " << suite << ": needs " << devices
              << " paced sim devices (HAL_SIM_CONFIG=" << config << "): " << error.message()
              << "\n";
    return false;
  }
  return true;
}

}  // namespace hal::bench
