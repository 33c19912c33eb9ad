// Runs a Google Benchmark suite and reports each hal figure beside its baseline from the same
// run, as a table or as JSON (schema hal.bench/1).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace hal::bench {

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

// Parses --json (and Google Benchmark's own flags), runs the registered benchmarks, and prints
// the comparisons (times: lower is better), then the figures `measure` returns.
int run_suite(int argc, char** argv, const std::string& suite, const std::string& device,
              const std::vector<Comparison>& comparisons,
              const std::function<std::vector<Figure>()>& measure = nullptr);

}  // namespace hal::bench
