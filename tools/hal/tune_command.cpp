// `hal tune --device ID [--op matmul|reduce|all] [--shapes MxNxK,...] [--budget 60s] [--retune]
// [--json]`: searches the parameters of hal's own kernels on a device and keeps the fastest in
// the tuning cache (hal/tune.hpp, docs/tuning.md).
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "hal/tune.hpp"
#include "json_text.hpp"
#include "option_values.hpp"

namespace hal::tool {
namespace {

// "2048x2048x2048" (m x n x k), or "2048" for a cube.
TuneShape parse_shape(const std::string& text) {
  std::vector<uint64_t> sizes;
  size_t start = 0;
  while (true) {
    const size_t end = text.find('x', start);
    sizes.push_back(count_option("--shapes", text.substr(start, end - start), 1, 1u << 20));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (sizes.size() == 1) sizes = {sizes[0], sizes[0], sizes[0]};
  if (sizes.size() != 3)
    throw Error(ErrorCode::InvalidArgument,
                "--shapes '" + text + "': a shape is MxNxK (or N for N x N x N)");
  return {static_cast<int64_t>(sizes[0]), static_cast<int64_t>(sizes[1]),
          static_cast<int64_t>(sizes[2])};
}

// "60s", "90", "2m", "500ms": from 1 ms (less rounds to no time at all) to a day.
std::chrono::milliseconds parse_budget(const std::string& text) {
  double scale = 1000;
  std::string number = text, unit = "s";
  if (text.ends_with("ms")) {
    scale = 1;
    unit = "ms";
    number = text.substr(0, text.size() - 2);
  } else if (text.ends_with("s")) {
    number = text.substr(0, text.size() - 1);
  } else if (text.ends_with("m")) {
    scale = 60000;
    unit = "m";
    number = text.substr(0, text.size() - 1);
  }
  const double value = real_option("--budget", number, 0, 86400.0 * 1000 / scale);
  if (value * scale < 1)
    throw Error(ErrorCode::InvalidArgument, "--budget '" + text + "' is " + number + " " + unit +
                                                ", under the least budget of 1 ms");
  return std::chrono::milliseconds(static_cast<int64_t>(value * scale + 0.5));
}

void print_text(const TuneReport& report) {
  std::cout << "tuned " << report.device << " in " << std::fixed << std::setprecision(1)
            << report.seconds << " s" << (report.budget_exhausted ? " (budget spent)" : "")
            << "; cache " << (report.cache_file.empty() ? "none" : report.cache_file);
  if (!report.cache_problem.empty())
    std::cout << " (nothing kept for later processes: " << report.cache_problem << ")";
  std::cout << "\n";
  for (const TuneEntry& e : report.entries) {
    std::cout << "  " << e.op << " " << e.dtype << " " << e.shape_class << ": " << e.choice;
    if (e.choice == "hal") std::cout << " (" << e.params << ")";
    std::cout << std::setprecision(3) << "  hal " << e.hal_ms << " ms, default " << e.default_ms
              << " ms";
    if (e.vendor_ms > 0) std::cout << ", vendor " << e.vendor_ms << " ms";
    if (e.from_cache)
      std::cout << "  [cached]";
    else
      std::cout << "  [" << e.candidates_tried << " tried, " << e.candidates_rejected
                << " rejected]";
    std::cout << "\n";
  }
}

nlohmann::ordered_json to_json(const TuneReport& report) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const TuneEntry& e : report.entries)
    entries.push_back({{"op", e.op},
                       {"dtype", e.dtype},
                       {"shape_class", e.shape_class},
                       {"choice", e.choice},
                       {"params", e.params},
                       {"hal_ms", e.hal_ms},
                       {"default_ms", e.default_ms},
                       {"vendor_ms", e.vendor_ms},
                       {"candidates_tried", e.candidates_tried},
                       {"candidates_rejected", e.candidates_rejected},
                       {"from_cache", e.from_cache}});
  return {{"schema", "hal.tune/1"},
          {"device", report.device},
          {"cache_file", report.cache_file},
          {"cache_problem", report.cache_problem},
          {"seconds", report.seconds},
          {"budget_exhausted", report.budget_exhausted},
          {"entries", entries}};
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "tune", "Search the parameters of hal's own kernels on a device and cache the fastest");
  auto id = std::make_shared<std::string>();
  auto op = std::make_shared<std::string>("all");
  auto shapes = std::make_shared<std::vector<std::string>>();
  auto budget = std::make_shared<std::string>("60s");
  auto max_candidates = std::make_shared<int>(0);
  auto retune = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  command->add_option("--device", *id, "Device id or UUID prefix (e.g. opencl:0)")->required();
  command->add_option("--op", *op, "matmul, reduce or all (default all)")
      ->check(CLI::IsMember({"matmul", "reduce", "all"}));
  command->add_option("--shapes", *shapes,
                      "matmul shapes MxNxK, comma-separated; for reduce, element counts");
  command->add_option("--budget", *budget, "Wall time for the whole search (default 60s)");
  CLI::Option* max_candidates_given = command->add_option(
      "--max-candidates", *max_candidates, "At most this many candidates per class (default all)");
  command->add_flag("--retune", *retune, "Search again where the cache holds a result");
  command->add_flag("--json", *json, "Print JSON (schema hal.tune/1)");
  set_work(*command, [=] {
    TuneOptions options;
    if (*op != "all") options.ops = {*op};
    for (const std::string& text : names_option("--shapes", *shapes)) {
      if (*op == "reduce")
        options.reduce_counts.push_back(
            static_cast<int64_t>(count_option("--shapes", text, 1, uint64_t{1} << 40)));
      else
        options.matmul_shapes.push_back(parse_shape(text));
    }
    options.budget = parse_budget(*budget);
    // 0 is not "all" (the default, when the option is absent): a run that may try nothing.
    if (max_candidates_given->count() > 0 && *max_candidates < 1)
      throw Error(ErrorCode::InvalidArgument,
                  "--max-candidates " + std::to_string(*max_candidates) + " must be at least 1");
    options.max_candidates = *max_candidates;
    options.retune = *retune;
    const TuneReport report = tune(device(*id), options);
    if (*json)
      std::cout << to_json(report).dump(2, ' ', false, kReplaceBadUtf8) << "\n";
    else
      print_text(report);
  });
}

}  // namespace hal::tool
