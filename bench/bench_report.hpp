// Runs a Google Benchmark suite and reports each hal figure beside its baseline from the same
// run, as a table or as JSON (schema hal.bench/1).
#pragma once

#include <benchmark/benchmark.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hal::bench {

// Notes that benchmark `name` failed with `message`; run_suite lists each failed benchmark once.
void record_failure(const std::string& name, const std::string& message);

namespace detail {

// Registers `function(state, args...)` under `registered`, reported as `reported`. An exception
// it throws becomes the benchmark's error (SkipWithError): thrown through Google Benchmark it
// would end the process, and the suite's other benchmarks would never run. The runs after a
// failure fail too, citing it: Google Benchmark 1.7 dereferences a null pointer when it
// aggregates repetitions whose first one failed and later ones did not.
template <class Function, class... Args>
benchmark::internal::Benchmark* register_guarded(const std::string& registered,
                                                 const std::string& reported, Function function,
                                                 Args... args) {
  auto failure = std::make_shared<std::string>();  // the first error's message, once one came
  return benchmark::RegisterBenchmark(registered.c_str(), [=](benchmark::State& state) {
    if (!failure->empty()) return state.SkipWithError(failure->c_str());
    try {
      function(state, args...);
    } catch (const std::exception& error) {
      *failure = error.what();
      record_failure(reported, *failure);
      state.SkipWithError(failure->c_str());
    }
  });
}

}  // namespace detail

// One guarded benchmark (see detail::register_guarded). Give it no ->Arg: a registration with
// several arguments would share one failure among them; register_guarded_arg each instead.
template <class Function, class... Args>
benchmark::internal::Benchmark* register_guarded(const std::string& name, Function function,
                                                 Args... args) {
  return detail::register_guarded(name, name, function, args...);
}

// A guarded benchmark with one argument, reported as "name/argument" as ->Arg would name it.
template <class Function, class... Args>
benchmark::internal::Benchmark* register_guarded_arg(const std::string& name, int64_t argument,
                                                     Function function, Args... args) {
  return detail::register_guarded(name, name + "/" + std::to_string(argument), function, args...)
      ->Arg(argument);
}

// BENCHMARK(fn) and BENCHMARK(fn)->Arg(argument), guarded.
#define HAL_GUARDED_BENCHMARK(fn) \
  BENCHMARK_PRIVATE_DECLARE(guarded) = ::hal::bench::register_guarded(#fn, fn)
#define HAL_GUARDED_BENCHMARK_ARG(fn, argument) \
  BENCHMARK_PRIVATE_DECLARE(guarded) = ::hal::bench::register_guarded_arg(#fn, argument, fn)

struct Comparison {
  std::string name;       // the figure's name in the report
  std::string benchmark;  // the Google Benchmark that measures hal
  std::string baseline;   // the one that measures the baseline
  std::string goal;       // what the issue asks for, in words ("ratio <= 1.2"), or ""
};

// A figure that is not a time, measured outside Google Benchmark (a ratio of bytes, say).
struct Figure {
  std::string name;
  double value = 0;
  std::string unit;
  std::string baseline;
  double baseline_value = 0;
  double ratio = 0;
  std::string better;  // "lower" or "higher"
  std::string goal;
};

// Removes `--name=VALUE` or `--name VALUE` from argv and returns VALUE, or `fallback`.
std::string take_option(int& argc, char** argv, const std::string& name,
                        const std::string& fallback);

// Runs `command` (a peer such as PyTorch in a child process) and returns what it printed, a
// JSON report; Internal naming the command, its output and `hint` when it cannot start or
// exits with a failure.
std::string run_peer(const std::string& command, const std::string& hint = "");

// A suite that measures its own paced sim fleet: sets HAL_SIM_CONFIG to `config` whatever the
// environment says (the figures are about these devices) and checks that sim:0 to
// sim:(devices - 1) are there. False, having said why on stderr, when they are not.
bool use_sim_fleet(const std::string& suite, const char* config, int devices);

// Parses --json (and Google Benchmark's own flags), runs the registered benchmarks, and prints
// the comparisons (times: lower is better), then the figures `measure` returns. A benchmark
// that failed (or a `measure` that threw) is listed under "errors" and makes the status 1; the
// others are reported all the same. A --device still in argv reaches a suite that measures
// the host (its main takes no device): it may name cpu:0, and any other device exits 2.
int run_suite(int argc, char** argv, const std::string& suite, const std::string& device,
              const std::vector<Comparison>& comparisons,
              const std::function<std::vector<Figure>()>& measure = nullptr);

}  // namespace hal::bench
