// Runs a Google Benchmark suite and reports each hal figure beside its baseline from the same
// run, as a table or as JSON (schema hal.bench/1).
#pragma once

#include <string>
#include <vector>

namespace hal::bench {

struct Comparison {
  std::string name;       // the figure's name in the report
  std::string benchmark;  // the Google Benchmark that measures hal
  std::string baseline;   // the one that measures the baseline
  std::string goal;       // what the issue asks for, in words ("ratio <= 1.2"), or ""
};

// Parses --json (and Google Benchmark's own flags), runs the registered benchmarks, and prints
// the comparisons. Lower is better for every figure: they are times.
int run_suite(int argc, char** argv, const std::string& suite, const std::string& device,
              const std::vector<Comparison>& comparisons);

}  // namespace hal::bench
