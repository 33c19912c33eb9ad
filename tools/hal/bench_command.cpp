// `hal bench [SUITE...] [--device ID|all] [--quick] [--json] [--output FILE] [Google Benchmark
// flags]`: runs hal's benchmark suites, which live in their own executables (built on Google
// Benchmark) next to `hal` in a build tree or under libexec/hal in an install. With --json or
// --output, the suites' reports become one document (schema hal.bench/1) with the machine, its
// devices and hal's version: the file to attach to a performance report.
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "core/host_cpu.hpp"
#include "hal/dist.hpp"
#include "hal/hal.hpp"
#include "json_text.hpp"
#include "output_files.hpp"
#include "trace_files.hpp"

namespace hal::tool {
namespace {

using json = nlohmann::ordered_json;

const std::vector<std::string> kSuites = {"stream", "thread_pool", "memory",   "dispatch", "copy",
                                          "ops",    "select",      "pipeline", "mesh"};
// Suites run only when named: models needs PyTorch and the exported models, train needs
// PyTorch (scripts/setup-bench-models.sh); collectives wants several processes (mpirun -np 4
// hal bench collectives), every one of which runs it while rank 0 alone reports; serve runs
// servers and load for about a minute; cuda_host measures the CUDA backend on a stand-in
// driver (built where the CUDA headers are).
const std::vector<std::string> kNamedSuites = {"models", "train", "collectives", "serve",
                                               "cuda_host"};

struct Options {
  std::vector<std::string> suites;
  std::string device;  // an id, "all", or "" for each suite's default
  bool quick = false;
  bool json = false;
  bool list = false;  // print what would run, run nothing
  std::string output;
  std::vector<std::string> extra;  // passed on to Google Benchmark
};

struct Run {
  std::string suite, device;
};

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

// Which devices a suite measures: dispatch and copy compare with a raw driver, so they take
// the backends they have one for (dispatch: OpenCL, CUDA, Vulkan; copy: OpenCL, CUDA); ops takes
// any; the others measure the host.
bool suite_takes(const std::string& suite, const Device& device) {
  const std::string_view backend = device.info().backend();
  if (suite == "ops") return true;
  if (suite == "dispatch") return backend == "opencl" || backend == "cuda" || backend == "vulkan";
  if (suite == "copy") return backend == "opencl" || backend == "cuda";
  return false;
}

// Google Benchmark's flags (1.7), which every suite takes: switches stand alone or take
// "=VALUE"; the others need "=VALUE".
const std::vector<std::string> kBenchmarkSwitches = {
    "benchmark_list_tests", "benchmark_enable_random_interleaving",
    "benchmark_report_aggregates_only", "benchmark_display_aggregates_only",
    "benchmark_counters_tabular"};
const std::vector<std::string> kBenchmarkValueFlags = {
    "benchmark_filter",      "benchmark_min_time",  "benchmark_min_warmup_time",
    "benchmark_repetitions", "benchmark_format",    "benchmark_out",
    "benchmark_out_format",  "benchmark_color",     "benchmark_perf_counters",
    "benchmark_context",     "benchmark_time_unit", "v"};

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether `suite` takes `flag`, one passed on from hal bench's command line: Google Benchmark's,
// or the suite's own (models: --models=DIR; ops: --tune-budget=SECONDS).
bool suite_takes_flag(const std::string& suite, const std::string& flag) {
  if (!flag.starts_with("--")) return false;
  const size_t equals = flag.find('=');
  const std::string name = flag.substr(2, equals == std::string::npos ? equals : equals - 2);
  if (listed(kBenchmarkSwitches, name)) return true;
  if (equals == std::string::npos) return false;
  return listed(kBenchmarkValueFlags, name) || (suite == "models" && name == "models") ||
         (suite == "ops" && name == "tune-budget");
}

// Refuses, for --list, a run the suite would refuse once started (it exits 2, a usage error):
// a --device it does not take (the host's suites take cpu:0 alone; ops any device there is;
// dispatch and copy a device of a backend whose driver they compare with), or a flag it does
// not know.
void check_run(const Run& run, const Options& options) {
  const std::string suite = "hal bench " + run.suite + ": ";
  for (const std::string& flag : options.extra)
    if (!suite_takes_flag(run.suite, flag))
      throw CLI::ExtrasError(suite + "unrecognized flag " + flag +
                                 " (the suites take Google Benchmark's --benchmark_* flags)",
                             CLI::ExitCodes::ExtrasError);
  if (run.device.empty()) return;
  const bool host_suite = run.suite != "ops" && run.suite != "dispatch" && run.suite != "copy";
  if (host_suite) {
    if (run.device != "cpu:0")
      throw CLI::ValidationError(suite +
                                 "this suite measures hal on the host and runs on "
                                 "cpu:0; --device " +
                                 run.device + " does not apply");
    return;
  }
  Device target;
  try {
    target = device(run.device);
  } catch (const Error& error) {
    throw CLI::ValidationError(suite + error.message());
  }
  if (!suite_takes(run.suite, target))
    throw CLI::ValidationError(
        suite + "--device " + run.device + " has no driver to compare with: " + run.suite +
        " measures " + (run.suite == "copy" ? "OpenCL and CUDA" : "OpenCL, CUDA and Vulkan") +
        " devices against their driver API");
}

// What --list prints: each run's suite and device ("-" in text, null in JSON, where the suite
// picks its own), once every run is one its suite would start.
void list_runs(const std::vector<Run>& runs, const Options& options) {
  for (const Run& r : runs) check_run(r, options);
  if (!options.json) {
    for (const Run& r : runs)
      std::cout << r.suite << " " << (r.device.empty() ? "-" : r.device) << "\n";
    return;
  }
  json list = json::array();
  for (const Run& r : runs)
    list.push_back({{"suite", r.suite}, {"device", r.device.empty() ? json() : json(r.device)}});
  std::cout << json{{"schema", "hal.bench.list/1"}, {"runs", list}}.dump(2, ' ', false,
                                                                         kReplaceBadUtf8)
            << "\n";
}

std::vector<Run> plan(const Options& options) {
  std::vector<std::string> suites = options.suites.empty() ? kSuites : options.suites;
  for (const std::string& suite : suites)
    if (std::find(kSuites.begin(), kSuites.end(), suite) == kSuites.end() &&
        std::find(kNamedSuites.begin(), kNamedSuites.end(), suite) == kNamedSuites.end())
      throw Error(ErrorCode::InvalidArgument,
                  "no benchmark suite '" + suite +
                      "'; the suites are stream, thread_pool, memory, dispatch, copy, ops, "
                      "select, pipeline, mesh, and models, train, collectives, serve and cuda_host "
                      "when named");
  std::vector<Run> runs;
  for (const std::string& suite : suites) {
    if (options.device != "all") {
      runs.push_back({suite, options.device});
      continue;
    }
    bool any = false;
    for (const Device& device : devices())
      if (suite_takes(suite, device)) {
        runs.push_back({suite, device.id()});
        any = true;
      }
    if (!any && suite != "dispatch" && suite != "copy") runs.push_back({suite, ""});
  }
  return runs;
}

// While this process records a trace, each suite's process records its own (HAL_TRACE of a
// file beside it; the inherited HAL_TRACE would have it write over this one's), merged into this
// one's file at the end, each within this process's span of its run.
struct SuiteTraces {
  std::filesystem::path into = hal::trace::file();                   // empty: no trace recorded
  std::vector<std::pair<std::string, std::filesystem::path>> parts;  // span name, child's file
};

// Runs the suite's executable; its stdout is returned when `capture`, else shared with ours.
// `child_trace`: where the suite records its trace (empty: none).
std::pair<int, std::string> execute(const Run& run, const Options& options, bool capture,
                                    const std::filesystem::path& child_trace = {}) {
  const std::string path = find_suite(run.suite).string();
  std::vector<std::string> arguments{path};
  if (capture) arguments.emplace_back("--json");
  if (!run.device.empty()) arguments.push_back("--device=" + run.device);
  if (options.quick) arguments.emplace_back("--benchmark_min_time=0.05");
  arguments.insert(arguments.end(), options.extra.begin(), options.extra.end());
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  int out[2] = {-1, -1};
  if (capture && ::pipe(out) != 0)
    throw Error(ErrorCode::Internal, std::string("pipe: ") + std::strerror(errno));
  std::cout.flush();
  const pid_t child = ::fork();
  if (child < 0) throw Error(ErrorCode::Internal, std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    if (!child_trace.empty()) ::setenv("HAL_TRACE", child_trace.c_str(), 1);
    if (capture) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
    }
    ::execv(path.c_str(), argv.data());
    std::fprintf(stderr, "hal: could not run %s: %s\n", path.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  std::string text;
  if (capture) {
    ::close(out[1]);
    char chunk[4096];
    for (ssize_t n; (n = ::read(out[0], chunk, sizeof chunk)) > 0;) text.append(chunk, n);
    ::close(out[0]);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

// execute() within a span of this process's trace, the suite recording its own beside it.
std::pair<int, std::string> execute_traced(const Run& run, const Options& options, bool capture,
                                           SuiteTraces& traces) {
  if (traces.into.empty()) return execute(run, options, capture);
  const std::string span =
      "hal bench " + run.suite + (run.device.empty() ? "" : " on " + run.device);
  const std::filesystem::path file =
      traces.into.parent_path() /
      (traces.into.stem().string() + ".bench-" + std::to_string(::getpid()) + "-" +
       std::to_string(traces.parts.size()) + traces.into.extension().string());
  traces.parts.emplace_back(span, file);
  const hal::trace::Scope running(span);
  return execute(run, options, capture, file);
}

// Writes this process's trace with the suites' in it: each suite's events (under its own pid)
// shifted so that its first begins where this process's span of its run does, which places
// them within the suite's start-up time of where they ran. A suite that left no trace (it did
// not start) is skipped.
void merge_suite_traces(const SuiteTraces& traces) {
  if (traces.into.empty()) return;
  hal::trace::stop();
  nlohmann::ordered_json merged = read_trace(traces.into);
  uint64_t dropped = dropped_events(merged);
  nlohmann::ordered_json& events = merged["traceEvents"];
  const auto time_of = [](const nlohmann::ordered_json& event) {
    const auto ts = event.find("ts");
    return ts != event.end() && ts->is_number() && event.value("ph", "") != "M" ? ts->get<double>()
                                                                                : -1.0;
  };
  for (const auto& [span, file] : traces.parts) {
    std::error_code ignored;
    if (!std::filesystem::exists(file, ignored)) continue;
    nlohmann::ordered_json child;
    try {
      child = read_trace(file);
    } catch (const Error& error) {
      std::cerr << "hal bench: " << error.message() << " (left out of the trace)\n";
      continue;
    }
    double anchor = -1, first = -1;
    for (const nlohmann::ordered_json& event : events)
      if (event.value("ph", "") == "X" && event.value("name", "") == span) anchor = time_of(event);
    for (const nlohmann::ordered_json& event : child["traceEvents"])
      if (const double at = time_of(event); at >= 0 && (first < 0 || at < first)) first = at;
    if (anchor >= 0 && first >= 0) {
      for (nlohmann::ordered_json& event : child["traceEvents"]) {
        if (const auto ts = event.find("ts"); ts != event.end() && ts->is_number())
          *ts = ts->get<double>() + anchor - first;
        if (event.value("name", "") == "process_name") event["args"] = {{"name", span}};
        events.push_back(std::move(event));
      }
      dropped += dropped_events(child);
    }
    std::filesystem::remove(file, ignored);
  }
  merged["otherData"]["dropped_events"] = dropped;
  write_file_atomically(traces.into.string(), merged.dump(-1, ' ', false, kReplaceBadUtf8) + "\n",
                        "--trace");
}

json machine_json() {
  utsname system{};
  ::uname(&system);
  const DeviceInfo& cpu = hal::detail::host_cpu().info();
  return {{"hostname", system.nodename},
          {"os", std::string(system.sysname) + " " + system.release},
          {"cpu", cpu.name},
          {"cores", cpu.compute_units},
          {"memory", cpu.memory_total.bytes}};
}

json devices_json() {
  json list = json::array();
  for (const Device& device : devices()) {
    const DeviceInfo& info = device.info();
    list.push_back({{"id", info.id},
                    {"name", info.name},
                    {"vendor", info.vendor},
                    {"kind", to_string(info.kind)},
                    {"arch", info.architecture},
                    {"driver_version", info.driver_version}});
  }
  return list;
}

int run_suites(const Options& options, SuiteTraces& traces) {
  const std::vector<Run> runs = plan(options);
  if (options.list) {
    list_runs(runs, options);
    return 0;
  }
  if (!options.output.empty()) check_output_file(options.output, "--output");  // before the runs
  // Under mpirun every rank runs the suites (collectives need them all); rank 0 reports.
  const bool reporting = dist::launch_info().rank == 0;
  const bool capture = options.json || !options.output.empty() || !reporting;
  int worst = 0;
  if (!capture) {
    for (const Run& r : runs) {
      if (runs.size() > 1)
        std::cout << "== " << r.suite << (r.device.empty() ? "" : " on " + r.device) << " ==\n";
      worst = std::max(worst, execute_traced(r, options, false, traces).first);
    }
    return worst;
  }
  if (!reporting) {
    for (const Run& r : runs)
      worst = std::max(worst, execute_traced(r, options, true, traces).first);
    return worst;
  }
  json results = json::array(), suites = json::array();
  for (const Run& r : runs) {
    const auto [status, text] = execute_traced(r, options, true, traces);
    worst = std::max(worst, status);
    json entry{{"suite", r.suite}, {"device", r.device}, {"status", status}};
    const size_t start = text.find('{');
    const json report = start == std::string::npos ? json()
                                                   : json::parse(text.substr(start), nullptr,
                                                                 /*allow_exceptions=*/false);
    // A suite whose benchmarks partly failed still reports the rest, and lists the failures.
    const bool reported = report.is_object() && report.contains("results");
    if (reported) {
      entry["device"] = report.value("device", r.device);
      for (json figure : report["results"]) {
        json tagged{{"suite", r.suite}, {"device", entry["device"]}};
        tagged.update(figure);
        results.push_back(std::move(tagged));
      }
      if (report.contains("errors") && !report["errors"].empty())
        entry["errors"] = report["errors"];
    }
    if (status != 0 && !entry.contains("errors"))
      entry["error"] = text.empty() || reported ? "exit status " + std::to_string(status) : text;
    suites.push_back(std::move(entry));
  }
  json document{{"schema", "hal.bench/1"}};
  if (runs.size() == 1) {  // a single suite's report keeps its own fields at the top
    document["suite"] = runs.front().suite;
    document["device"] = suites.front()["device"];
  }
  document["hal_version"] = std::string(version());
  document["machine"] = machine_json();
  document["devices"] = devices_json();
  document["suites"] = suites;
  document["results"] = results;
  if (!options.output.empty()) {
    write_file_atomically(options.output, document.dump(2, ' ', false, kReplaceBadUtf8) + "\n",
                          "--output");
    std::cerr << "hal bench: " << results.size() << " figures from " << runs.size()
              << " runs written to " << options.output << "\n";
  }
  if (options.json) std::cout << document.dump(2, ' ', false, kReplaceBadUtf8) << "\n";
  return worst;
}

int run(const Options& options) {
  SuiteTraces traces;
  const int status = run_suites(options, traces);
  merge_suite_traces(traces);
  return status;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "bench",
      "Run benchmark suites (stream, thread_pool, memory, dispatch, copy, ops, select, pipeline, "
      "mesh; default all; models, train, collectives, serve and cuda_host when named); figures "
      "are ratios to same-run baselines");
  auto options = std::make_shared<Options>();
  command->add_option("suite", options->suites, "Suites to run (default: all)");
  command->add_option("--device", options->device,
                      "The device to measure, or 'all' (dispatch: opencl:N, cuda:N or "
                      "vulkan:N; copy: opencl:N or cuda:N; ops: any)");
  command->add_flag("--quick", options->quick, "Shorter runs (--benchmark_min_time=0.05)");
  command->add_flag("--json", options->json, "Print one JSON document (schema hal.bench/1)");
  command->add_flag("--list", options->list,
                    "Print each suite and device that would run (one per line; with --json: "
                    "hal.bench.list/1), refusing a device or flag as the run would; run nothing");
  command->add_option("--output", options->output,
                      "Write the JSON document (schema hal.bench/1) to FILE");
  command->allow_extras();  // passed on to Google Benchmark, e.g. --benchmark_filter=hit
  set_work(*command, [command, options] {
    options->extra = command->remaining();
    if (const int status = run(*options); status != 0) throw ExitStatus{status};
  });
}

}  // namespace hal::tool
