// `hal compare --a ID --b ID --workload W [--metric latency|throughput|energy] [--alpha A]
// [--min-effect E] [--max-time T] [--seed N] [--b-env VAR=VALUE]... [--json]`: runs the workload
// on A and B interleaved in random order (warm-up runs discarded, each side on its own stream,
// outputs checked to agree) under the sequential design of hal/compare.hpp, and says which is
// faster, by how much and how sure that is (docs/evidence.md). --json prints hal.compare/1.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "agreement.hpp"
#include "commands.hpp"
#include "compare_side.hpp"
#include "hal/compare.hpp"
#include "hal/energy.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "hal/trace.hpp"
#include "hal/units.hpp"
#include "json_text.hpp"
#include "option_values.hpp"
#include "report_html.hpp"

namespace hal::tool {
namespace {

struct CompareOptions {
  std::string a, b, workload_text, metric_text = "latency", alpha_text = "0.05",
                                   min_effect_text = "2%", max_time_text = "60s", seed_text = "1",
                                   warmup_text = "2", first_look_text = "20";
  std::vector<std::string> b_env;
  WorkloadSpec workload;
  evidence::Metric metric = evidence::Metric::latency;
  evidence::SequentialDesign design;
  double max_seconds = 60;
  uint64_t warmup = 2;
  bool json = false;
  std::string html;                    // --html FILE: the comparison as a report page too
  const CLI::Option* trace = nullptr;  // --trace FILE, which set_work adds
};

// --alpha lies in [1e-9, 0.5), open at 0.5 as check_design requires: at 0.5 or above a test calls
// a true "no difference" a difference at least as often as not, and the ratio's 1 - alpha
// interval holds half the bootstrap's resamples or fewer. The floor, far below any level a
// comparison uses, keeps 1 - alpha a double below 1.
double alpha_option(const std::string& text) {
  const double alpha = real_option("--alpha", text, -HUGE_VAL, HUGE_VAL);
  if (!(alpha >= 1e-9 && alpha < 0.5))
    throw Error(ErrorCode::InvalidArgument,
                "--alpha: '" + text + "' is out of range (at least 1e-09, below 0.5)");
  return alpha;
}

// "2%" -> 0.02, "0.02" -> 0.02. The range error quotes the text as given, with limits in the
// unit it was given in ("'-5%' is out of range (0% to 999%)", not "'-5' ... (0 to 999)").
double fraction_option(std::string_view option, const std::string& given, double max) {
  std::string text = given;
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  const double value = real_option(option, text, -HUGE_VAL, HUGE_VAL);
  const double fraction = percent ? value / 100 : value;
  if (!(fraction >= 0 && fraction <= max)) {
    char limit[32];
    std::snprintf(limit, sizeof limit, percent ? "%g%%" : "%g", percent ? 100 * max : max);
    throw Error(ErrorCode::InvalidArgument, std::string(option) + ": '" + given +
                                                "' is out of range (0" + (percent ? "%" : "") +
                                                " to " + std::string(limit) + ")");
  }
  return fraction;
}

// "60s", "500ms", "2m", "90" (seconds), from 1 ms to a day. The range is checked on the
// seconds, and its error quotes the text as given with limits in units it takes: "out of range
// (1 to 8.64e+07)" for '0.5ms' named milliseconds nowhere.
double seconds_option(std::string_view option, std::string text) {
  const std::string given = text;
  double scale = 1;
  if (text.size() > 2 && text.ends_with("ms")) {
    scale = 1e-3;
    text.resize(text.size() - 2);
  } else if (text.size() > 1 && (text.back() == 's' || text.back() == 'm')) {
    scale = text.back() == 'm' ? 60 : 1;
    text.pop_back();
  }
  const double seconds = real_option(option, text, -HUGE_VAL, HUGE_VAL) * scale;
  if (!(seconds >= 1e-3 && seconds <= 86400))
    throw Error(ErrorCode::InvalidArgument,
                std::string(option) + ": '" + given + "' is out of range (1ms to 86400s)");
  return seconds;
}

std::string decision_name(evidence::Decision d) {
  switch (d) {
    case evidence::Decision::differ:
      return "differ";
    case evidence::Decision::equivalent:
      return "equivalent";
    case evidence::Decision::undecided:
      return "inconclusive";
  }
  return "inconclusive";
}

// The page of hal report with this comparison and its side's devices (their cached calibration
// figures only: measuring would keep the user waiting after the comparison). Side B run with
// --b-env is the child's device, which this process may not have: left out.
void write_compare_page(const CompareOptions& o, nlohmann::json report) {
  ReportContent content;
  content.title = "hal compare: " + o.workload.text;
  std::vector<std::string> ids{o.a};
  if (o.b_env.empty() && o.b != o.a) ids.push_back(o.b);
  for (const std::string& id : ids) {
    const Device d = device(id);
    content.devices.push_back(d.info());
    content.calibrations.push_back(cached_calibration(d));
  }
  content.comparisons.push_back(std::move(report));
  write_report(o.html, report_html(content));
}

// An energy sample covers at least this much of a side's runs and ten moves of its counter, read
// after each run (RAPL's move about once a millisecond, NVML's much less often: fewer moves would
// measure the counter's steps rather than the runs), but no more than kEnergyLongestSample.
constexpr double kEnergyWindowSeconds = 0.05, kEnergyLongestSample = 10.0;
constexpr int kEnergyMoves = 10;

// Joules per run of `side`, over as many runs as fill the window.
double energy_sample(CompareSide& side, EnergyMeter& meter, const std::string& name) {
  const double before = meter.joules();
  double busy = 0, last = before;
  int runs = 0, moves = 0;
  do {
    busy += side.timed_run();
    ++runs;
    if (const double now = meter.joules(); now != last) {
      ++moves;
      last = now;
    }
  } while ((busy < kEnergyWindowSeconds || moves < kEnergyMoves) && busy < kEnergyLongestSample);
  const double joules = (last - before) / runs;
  if (!(joules > 0))
    throw Error(ErrorCode::Unsupported, "--metric energy: the counter (" + meter.source() +
                                            ") did not move over " + std::to_string(runs) +
                                            " runs of " + name + "; it cannot measure them");
  return joules;
}

// The file this process's trace goes to: --trace's, else HAL_TRACE's (which --trace replaces);
// empty when none is recorded.
std::filesystem::path trace_file(const CompareOptions& o) {
  if (!hal::trace::enabled()) return {};
  if (o.trace && !o.trace->results().empty() && !o.trace->results().back().empty())
    return o.trace->results().back();
  const char* file = std::getenv("HAL_TRACE");
  return file ? file : "";
}

// Side B's trace when it runs in a child while this process records one: the child's own file
// beside this one (FILE.json -> FILE.side-b.json), merged into it after the run. None when the
// user gave the child a HAL_TRACE of their own (--b-env): theirs to keep.
std::optional<ChildTrace> child_trace(const CompareOptions& o, const std::filesystem::path& file) {
  if (o.b_env.empty() || file.empty()) return std::nullopt;
  for (const std::string& entry : o.b_env)
    if (entry.rfind("HAL_TRACE=", 0) == 0) return std::nullopt;
  ChildTrace trace;
  trace.file = file.parent_path() / (file.stem().string() + ".side-b" + file.extension().string());
  return trace;
}

// Writes this process's trace now, not when the command ends, so that side B's, written as its
// child exited, can be added to it. A failure leaves B's spans in their own file, said on stderr:
// the comparison stands.
void merge_side_b_trace(const ChildTrace& trace, const std::filesystem::path& file) {
  hal::trace::stop();
  try {
    merge_child_trace(trace, file);
  } catch (const Error& error) {
    std::cerr << "hal compare: side B's trace is left in " << trace.file.string() << ", not in "
              << file.string() << ": " << error.message() << "\n";
  }
}

void compare(const CompareOptions& o) {
  if (!o.html.empty()) check_writable(o.html);  // before the run, not after it
  const auto started = std::chrono::steady_clock::now();
  auto sampling_from = started;  // --max-time counts from the first sample
  const auto since = [](std::chrono::steady_clock::time_point from) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  };
  // Energy meters first: a device without one is refused before any run.
  const bool energy = o.metric == evidence::Metric::energy;
  std::optional<EnergyMeter> meter_a, meter_b;
  if (energy) {
    meter_a = EnergyMeter::of(device(o.a));
    meter_b = EnergyMeter::of(device(o.b));
  }
  // Side B in a child writes its trace to a file of its own (HAL_TRACE is inherited: both would
  // write the same file, and this process's, written last, would hold A's spans alone).
  const std::filesystem::path traced = trace_file(o);
  std::optional<ChildTrace> b_trace = child_trace(o, traced);
  std::unique_ptr<CompareSide> a = local_side(o.a, o.workload);
  std::unique_ptr<CompareSide> b =
      o.b_env.empty() ? local_side(o.b, o.workload)
                      : child_side(o.b, o.workload, o.b_env, b_trace ? &*b_trace : nullptr);
  for (uint64_t i = 0; i < o.warmup; ++i) {  // compiles kernels, fills caches: not measured
    a->timed_run();
    b->timed_run();
  }
  // A faster wrong answer is no winner.
  const std::vector<float> out_a = a->output(), out_b = b->output();
  if (out_a.size() != out_b.size())
    throw Error(ErrorCode::InvalidState, "outputs differ: A (" + o.a + ") gives " +
                                             std::to_string(out_a.size()) + " values, B (" + o.b +
                                             ") " + std::to_string(out_b.size()));
  // A is the reference: the tolerance scales with its finite values (agreement.hpp).
  const Agreement agreed = agreement(out_b, out_a);
  const double difference = agreed.max_difference;
  if (!agreed.agree())
    throw Error(ErrorCode::InvalidState,
                "outputs differ: max|A - B| = " + std::to_string(difference) + " > " +
                    std::to_string(agreed.tolerance) + " between A (" + o.a + ") and B (" + o.b +
                    "); a faster wrong answer is no winner");

  const double work = o.workload.work();
  const auto sample = [&](CompareSide& side, std::optional<EnergyMeter>& meter,
                          const std::string& name) {
    if (energy) return energy_sample(side, *meter, name);
    const double seconds = side.timed_run();
    return o.metric == evidence::Metric::latency ? seconds : work / seconds;
  };
  std::mt19937_64 order(o.design.seed);
  sampling_from = std::chrono::steady_clock::now();
  const evidence::SequentialRun run = evidence::run_sequential(
      o.design,
      [&](std::vector<double>& sa, std::vector<double>& sb) {
        if (order() & 1) {  // which side runs first in this pair
          sa.push_back(sample(*a, meter_a, "A"));
          sb.push_back(sample(*b, meter_b, "B"));
        } else {
          sb.push_back(sample(*b, meter_b, "B"));
          sa.push_back(sample(*a, meter_a, "A"));
        }
      },
      [&] { return since(sampling_from) < o.max_seconds; }, 1'000'000);
  if (b_trace) {
    b.reset();  // the child exits, writing its trace
    merge_side_b_trace(*b_trace, traced);
  }
  const evidence::Analysis& r = run.analysis;
  const std::string text = evidence::verdict(r, o.design, o.metric);
  const bool latency = o.metric == evidence::Metric::latency;
  const char* metric_name = latency ? "latency" : energy ? "energy" : "throughput";
  const std::string unit = latency ? "s" : energy ? "J" : o.workload.throughput_unit();
  {
    nlohmann::ordered_json env = nlohmann::ordered_json::array();
    for (const std::string& e : o.b_env) env.push_back(e);
    const evidence::RatioInterval mean = evidence::mean_ratio(r);
    nlohmann::ordered_json report{{"schema", "hal.compare/1"},
                                  {"a", o.a},
                                  {"b", o.b},
                                  {"b_env", env},
                                  {"workload", o.workload.text},
                                  {"metric", metric_name},
                                  {"unit", unit},
                                  {"verdict", text},
                                  {"decision", decision_name(r.decision)},
                                  {"ratio", r.ratio.ratio},
                                  {"ci", {r.ratio.low, r.ratio.high}},
                                  {"confidence", 1 - o.design.alpha},
                                  {"mean_ratio", mean.ratio},
                                  {"mean_ci", {mean.low, mean.high}},
                                  {"mean_confidence", evidence::mean_ratio_confidence(r)},
                                  {"p_value", r.welch.p_value},
                                  {"mann_whitney_p", r.mann_whitney.p_value},
                                  {"effect_size", r.effect_size},
                                  {"n_a", r.n_a},
                                  {"n_b", r.n_b},
                                  {"look", r.look},
                                  {"look_alpha", r.look_alpha},
                                  {"more_samples", r.more_samples},
                                  {"alpha", o.design.alpha},
                                  {"min_effect", o.design.min_effect},
                                  {"seed", o.design.seed},
                                  {"max_abs_diff", difference},
                                  {"seconds", since(started)},
                                  {"samples_a", run.a},
                                  {"samples_b", run.b}};
    if (energy) report["energy_sources"] = {{"a", meter_a->source()}, {"b", meter_b->source()}};
    if (!o.html.empty())
      write_compare_page(o, nlohmann::json::parse(report.dump(-1, ' ', false, kReplaceBadUtf8)));
    if (o.json) {
      std::cout << report.dump(2, ' ', false, kReplaceBadUtf8) << "\n";
      return;
    }
  }
  const auto median_text = [&](const std::vector<double>& samples) {
    const double m = evidence::median(samples);
    if (latency) return format_seconds(m);
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.4g %s", m, unit.c_str());
    return std::string(buffer);
  };
  std::cout << "hal compare: " << o.workload.text << ", " << metric_name
            << (o.metric == evidence::Metric::throughput ? " (higher is better)"
                                                         : " (lower is better)")
            << (energy ? ", joules per run from " + meter_a->source() : std::string()) << "\n"
            << "  A  " << o.a << "  median " << median_text(run.a) << "\n"
            << "  B  " << o.b << (o.b_env.empty() ? "" : " (child process with --b-env)")
            << "  median " << median_text(run.b) << "\n"
            << "  outputs agree: max|A - B| = " << difference << "\n"
            << text << "\n";
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "compare", "A/B test: is B faster than A on a workload, by how much, and how sure is that");
  auto o = std::make_shared<CompareOptions>();
  command->add_option("--a", o->a, "Side A's device (the baseline)")->required();
  command->add_option("--b", o->b, "Side B's device")->required();
  command
      ->add_option("--workload", o->workload_text,
                   "matmul:N, softmax:RxC or model:PATH.onnx[:input=FILE.npy]")
      ->required();
  command->add_option("--metric", o->metric_text,
                      "latency (default), throughput, or energy (joules per run, where the "
                      "devices have an energy counter: hal/energy.hpp)");
  command->add_option("--alpha", o->alpha_text,
                      "False-positive rate over the whole run: at least 1e-9, below 0.5 "
                      "(default 0.05)");
  command->add_option("--min-effect", o->min_effect_text,
                      "The smallest difference that counts: '2%' or 0.02 (default 2%); 0 never "
                      "calls the sides equivalent");
  command->add_option("--max-time", o->max_time_text,
                      "Start no sample after this long (warm-up not counted; the sample in "
                      "flight and one analysis finish): '60s' (default), '500ms', '2m'; 1ms to "
                      "86400s");
  command->add_option("--seed", o->seed_text, "Seed of the run order and the bootstrap");
  command->add_option("--warmup", o->warmup_text, "Discarded runs per side (default 2)");
  command->add_option("--first-look", o->first_look_text,
                      "Samples per side at the first look (default 20; each look doubles)");
  command->add_option("--b-env", o->b_env,
                      "VAR=VALUE: run side B in a child process with this environment (repeat "
                      "for several)");
  command->add_flag("--json", o->json, "Print JSON (schema hal.compare/1)");
  command->add_option("--html", o->html,
                      "Also write the comparison as a self-contained HTML page (hal report's)");
  command->parse_complete_callback([o] {
    o->workload = parse_workload(o->workload_text);
    if (o->metric_text == "latency")
      o->metric = evidence::Metric::latency;
    else if (o->metric_text == "throughput")
      o->metric = evidence::Metric::throughput;
    else if (o->metric_text == "energy")
      o->metric = evidence::Metric::energy;
    else
      throw Error(ErrorCode::InvalidArgument,
                  "--metric: '" + o->metric_text + "' is not latency, throughput or energy");
    o->design.alpha = alpha_option(o->alpha_text);
    o->design.min_effect = fraction_option("--min-effect", o->min_effect_text, 9.99);
    o->max_seconds = seconds_option("--max-time", o->max_time_text);
    o->design.seed = count_option("--seed", o->seed_text, 0, UINT64_MAX);
    o->warmup = count_option("--warmup", o->warmup_text, 0, 1000);
    o->design.first_look = count_option("--first-look", o->first_look_text, 3, 1'000'000);
    for (const std::string& entry : o->b_env) {
      const size_t equals = entry.find('=');
      if (equals == 0 || equals == std::string::npos || entry.find_first_of(" \t\n") < equals)
        throw Error(ErrorCode::InvalidArgument, "--b-env: '" + entry + "' is not VAR=VALUE");
    }
  });
  set_work(*command, [o] { compare(*o); });
  o->trace = command->get_option("--trace");

  // Side B of `--b-env`, in the child process: hidden from --help.
  auto* worker = app.add_subcommand("compare-worker", "");
  worker->group("");
  auto w = std::make_shared<CompareOptions>();
  worker->add_option("--device", w->b)->required();
  worker->add_option("--workload", w->workload_text)->required();
  worker->parse_complete_callback([w] { w->workload = parse_workload(w->workload_text); });
  set_work(*worker, [w] { serve_compare_side(w->b, w->workload); });
}

}  // namespace hal::tool
