// `hal onnx-tests [--data DIR] [--device ID] [--no-fallback] [--filter REGEX] [--json]
// [--junit FILE]`: ONNX's own backend test data (Debian's libonnx-testdata) as a conformance
// suite. Each case directory holds model.onnx and test_data_set_*/{input,output}_N.pb; a case
// passes when every data set's outputs match within ONNX's tolerances (rtol 1e-3, atol 1e-7),
// fails on a wrong answer or an error hal should not have raised, and is unsupported where hal
// says why it cannot run it (op, attribute, dtype). String outputs must match exactly. Exits 1
// when any case fails.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "commands.hpp"
#include "cts.hpp"
#include "hal/error.hpp"
#include "hal/model.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"

namespace hal::tool {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultData = "/usr/share/libonnx-testdata/data";
// The suites the issue names; `real/` holds full-size models (ResNet-50 ...), run with --suite.
const std::vector<std::string> kSuites = {"node", "pytorch-converted", "pytorch-operator",
                                          "simple"};
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

enum class Status { passed, failed, unsupported };

std::string_view to_string(Status status) {
  return status == Status::passed ? "passed" : status == Status::failed ? "failed" : "unsupported";
}

struct CaseResult {
  std::string suite, name;
  Status status = Status::passed;
  std::string reason;
  double seconds = 0;
};

std::vector<fs::path> sorted_entries(const fs::path& dir, std::string_view prefix) {
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) entries.push_back(entry.path());
  // input_10 after input_9: by the number after the prefix where there is one.
  std::sort(entries.begin(), entries.end(), [&](const fs::path& a, const fs::path& b) {
    auto number = [&](const fs::path& p) {
      const std::string stem = p.stem().string().substr(prefix.size());
      return stem.empty() || !std::isdigit(static_cast<unsigned char>(stem[0])) ? -1L
                                                                                : std::stol(stem);
    };
    return number(a) != number(b) ? number(a) < number(b) : a < b;
  });
  return entries;
}

// Elements as doubles on the host, row-major.
std::vector<double> host_values(const Tensor& tensor, Stream& stream, Stream& cpu_stream) {
  const Tensor here = tensor.to(device("cpu:0"), stream);
  stream.synchronize();
  return cast(here, DType::f64, cpu_stream).to_vector<double>(cpu_stream);
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

// Empty when `actual` matches `expected`; else what differs, and where.
std::string compare(const std::string& name, const Tensor& actual, const Tensor& expected,
                    Stream& stream, Stream& cpu_stream) {
  if (actual.dtype() != expected.dtype())
    return "output '" + name + "' is " + std::string(hal::to_string(actual.dtype())) +
           ", expected " + std::string(hal::to_string(expected.dtype()));
  if (actual.shape() != expected.shape())
    return "output '" + name + "' has shape " + hal::to_string(actual.shape()) + ", expected " +
           hal::to_string(expected.shape());
  const std::vector<double> got = host_values(actual, stream, cpu_stream);
  const std::vector<double> want = host_values(expected, stream, cpu_stream);
  const bool floating = is_floating(expected.dtype());
  size_t worst = 0, wrong = 0;
  double worst_excess = -1, max_abs = 0, max_rel = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], e = want[i];
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e)) ++wrong, worst = i, worst_excess = INFINITY;
      continue;
    }
    if (a == e) continue;  // equal infinities included
    const double diff = std::abs(a - e);
    const double allowed = floating ? kAtol + kRtol * std::abs(e) : 0.0;
    max_abs = std::max(max_abs, diff);
    if (e != 0) max_rel = std::max(max_rel, diff / std::abs(e));
    if (diff > allowed || std::isinf(diff)) {
      ++wrong;
      if (diff - allowed > worst_excess) worst_excess = diff - allowed, worst = i;
    }
  }
  if (wrong == 0) return {};
  std::ostringstream out;
  out << "output '" << name << "': " << wrong << " of " << got.size()
      << " elements differ; max abs error " << max_abs << ", max rel error " << max_rel
      << "; worst at flat index " << worst << ": " << got[worst] << ", expected " << want[worst];
  return out.str();
}

// A string for a message: quoted, cut short past 40 bytes.
std::string quoted(const std::string& text) {
  return "'" + (text.size() > 40 ? text.substr(0, 40) + "..." : text) + "'";
}

// String tensors match exactly: the shape, then every string.
std::string compare(const std::string& name, const StringTensor& actual,
                    const StringTensor& expected) {
  if (actual.shape != expected.shape)
    return "output '" + name + "' has shape " + hal::to_string(actual.shape) + ", expected " +
           hal::to_string(expected.shape);
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < expected.data.size(); ++i)
    if (actual.data.at(i) != expected.data[i] && wrong++ == 0) first = i;
  if (wrong == 0) return {};
  return "output '" + name + "': " + std::to_string(wrong) + " of " +
         std::to_string(expected.data.size()) + " strings differ; first at flat index " +
         std::to_string(first) + ": " + quoted(actual.data[first]) + ", expected " +
         quoted(expected.data[first]);
}

std::string kind(const RunValue& value) {
  return std::holds_alternative<TensorSequence>(value) ? "sequence"
         : std::holds_alternative<StringTensor>(value) ? "string tensor"
                                                       : "tensor";
}

// A value's mismatch: an optional's presence, the kind of value, a sequence's length, then each
// tensor as compare() does.
std::string compare(const std::string& name, const RunValue& actual, const RunValue& expected,
                    Stream& stream, Stream& cpu_stream) {
  const auto* want = std::get_if<TensorSequence>(&expected);
  const auto* got = std::get_if<TensorSequence>(&actual);
  auto none = [](const RunValue& value) {
    const auto* tensor = std::get_if<Tensor>(&value);
    return tensor && !tensor->defined();
  };
  if (none(actual) || none(expected))
    return none(actual) == none(expected)
               ? ""
               : "output '" + name + "' is " + (none(actual) ? "none" : "a value") + ", expected " +
                     (none(expected) ? "none" : "a value");
  if (actual.index() != expected.index())
    return "output '" + name + "' is a " + kind(actual) + ", expected a " + kind(expected);
  if (const auto* strings = std::get_if<StringTensor>(&expected))
    return compare(name, std::get<StringTensor>(actual), *strings);
  if (!want)
    return compare(name, std::get<Tensor>(actual), std::get<Tensor>(expected), stream, cpu_stream);
  if (got->tensors.size() != want->tensors.size())
    return "output '" + name + "' is a sequence of " + std::to_string(got->tensors.size()) +
           " tensors, expected " + std::to_string(want->tensors.size());
  for (size_t i = 0; i < want->tensors.size(); ++i) {
    std::string difference = compare(name + "[" + std::to_string(i) + "]", got->tensors[i],
                                     want->tensors[i], stream, cpu_stream);
    if (!difference.empty()) return difference;
  }
  return {};
}

// Test data file `path` as the value `declared` says it holds (a tensor where unknown).
RunValue read_value(const fs::path& path, const ModelValue* declared, Stream& stream,
                    std::string* name) {
  if (!declared) return read_onnx_tensor(path, stream, name);
  return read_onnx_value(path, *declared, stream, name);
}

CaseResult run_case(const fs::path& dir, const std::string& suite, const Device& target) {
  CaseResult result;
  result.suite = suite;
  result.name = dir.filename().string();
  const auto start = std::chrono::steady_clock::now();
  Stream stream = target.create_stream();
  Stream cpu_stream = device("cpu:0").create_stream();
  try {
    const Model model = load_onnx(dir / "model.onnx");
    const auto data_sets = sorted_entries(dir, "test_data_set_");
    if (data_sets.empty()) throw Error(ErrorCode::InvalidArgument, "no test_data_set_* directory");
    for (const fs::path& data : data_sets) {
      std::map<std::string, RunValue> inputs;
      const auto input_files = sorted_entries(data, "input_");
      for (size_t i = 0; i < input_files.size(); ++i) {
        std::string name;
        // The files follow the model's inputs in order, which says how to read each.
        const ModelValue* in_order = i < model.inputs().size() ? &model.inputs()[i] : nullptr;
        RunValue value = read_value(input_files[i], in_order, stream, &name);
        const bool declared = std::any_of(model.inputs().begin(), model.inputs().end(),
                                          [&](const ModelValue& v) { return v.name == name; });
        if (!declared) {
          if (i >= model.inputs().size())
            throw Error(ErrorCode::InvalidArgument,
                        input_files[i].string() + " has no model input");
          name = model.inputs()[i].name;
        }
        inputs[name] = std::move(value);
      }
      const auto outputs = model.run_values(inputs, stream);
      const auto output_files = sorted_entries(data, "output_");
      if (output_files.size() != model.outputs().size())
        throw Error(ErrorCode::InvalidArgument,
                    data.string() + ": " + std::to_string(output_files.size()) +
                        " expected outputs for " + std::to_string(model.outputs().size()) +
                        " model outputs");
      for (size_t o = 0; o < output_files.size(); ++o) {
        const std::string& name = model.outputs()[o].name;
        const RunValue expected = read_value(output_files[o], &model.outputs()[o], stream, nullptr);
        std::string difference = compare(name, outputs.at(name), expected, stream, cpu_stream);
        if (!difference.empty()) {
          result.status = Status::failed;
          result.reason = data.filename().string() + ": " + difference;
          break;
        }
      }
      if (result.status == Status::failed) break;
    }
  } catch (const Error& error) {
    result.status = error.code() == ErrorCode::Unsupported ? Status::unsupported : Status::failed;
    result.reason = std::string(hal::to_string(error.code())) + ": " + error.message();
  } catch (const std::exception& error) {
    result.status = Status::failed;
    result.reason = error.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

struct Options {
  std::string data = kDefaultData;
  std::string device_id = "cpu:0";
  bool no_fallback = false;
  std::string filter;
  std::vector<std::string> suites;
  bool json = false;
  std::string junit;
};

size_t count(const std::vector<CaseResult>& results, Status status) {
  return static_cast<size_t>(std::count_if(
      results.begin(), results.end(), [&](const CaseResult& r) { return r.status == status; }));
}

// JUnit through the conformance suite's writer: a case per SUITE/NAME, unsupported as skipped.
void write_junit(const std::string& path, const std::string& device_id,
                 const std::vector<CaseResult>& results) {
  cts::Report report{device_id, {}};
  for (const CaseResult& r : results)
    report.cases.push_back({r.suite + "/" + r.name,
                            r.status == Status::passed   ? cts::Status::passed
                            : r.status == Status::failed ? cts::Status::failed
                                                         : cts::Status::not_supported,
                            r.reason, r.seconds});
  cts::write_junit(path, report, "hal.onnx_tests");
}

void run_all(const Options& options) {
  const Device target = device(options.device_id);
  const std::regex filter(options.filter.empty() ? ".*" : options.filter);
  const std::vector<std::string>& suites = options.suites.empty() ? kSuites : options.suites;
  if (!fs::is_directory(options.data))
    throw Error(ErrorCode::InvalidArgument,
                "no ONNX test data in " + options.data +
                    " (Debian: apt-get install libonnx-testdata, or --data DIR)");
  const CpuFallback fallback(!options.no_fallback);
  std::vector<CaseResult> results;
  std::vector<std::string> found_suites;
  for (const std::string& suite : suites) {
    const fs::path dir = fs::path(options.data) / suite;
    if (!fs::is_directory(dir)) continue;
    found_suites.push_back(suite);
    for (const fs::path& case_dir : sorted_entries(dir, "")) {
      if (!fs::exists(case_dir / "model.onnx")) continue;
      if (!std::regex_search(suite + "/" + case_dir.filename().string(), filter)) continue;
      results.push_back(run_case(case_dir, suite, target));
      if (!options.json) {
        const CaseResult& r = results.back();
        std::cout << (r.status == Status::passed   ? "  pass  "
                      : r.status == Status::failed ? "  FAIL  "
                                                   : "  n/s   ")
                  << r.suite << "/" << r.name;
        if (!r.reason.empty()) std::cout << ": " << r.reason;
        std::cout << "\n";
      }
    }
  }
  if (!options.junit.empty()) write_junit(options.junit, target.id(), results);
  const size_t passed = count(results, Status::passed), failed = count(results, Status::failed),
               unsupported = count(results, Status::unsupported);
  if (options.json) {
    nlohmann::ordered_json cases = nlohmann::ordered_json::array();
    for (const CaseResult& r : results)
      cases.push_back({{"suite", r.suite},
                       {"name", r.name},
                       {"status", to_string(r.status)},
                       {"reason", r.reason},
                       {"seconds", r.seconds}});
    std::cout << nlohmann::ordered_json{{"schema", "hal.onnx_tests/1"},
                                        {"device", target.id()},
                                        {"fallback", !options.no_fallback},
                                        {"suites", found_suites},
                                        {"passed", passed},
                                        {"failed", failed},
                                        {"unsupported", unsupported},
                                        {"cases", cases}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << target.id() << ": " << passed << " passed, " << failed << " failed, "
              << unsupported << " unsupported of " << results.size() << "\n";
  }
  if (failed > 0) throw ExitStatus{1};
}

}  // namespace

void add_onnx_tests_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "onnx-tests",
      "Run ONNX's backend test data (libonnx-testdata) on a device: each case passes, fails "
      "or is unsupported, with the reason");
  auto options = std::make_shared<Options>();
  command->add_option("--data", options->data,
                      "The test data's root (default " + std::string(kDefaultData) + ")");
  command->add_option("--device", options->device_id, "The device to run on (default cpu:0)");
  command->add_option("--suite", options->suites,
                      "Suites to run (node, pytorch-converted, pytorch-operator, simple, real); "
                      "default all but real");
  command->add_flag("--no-fallback", options->no_fallback,
                    "Ops the device cannot run are unsupported, not run on cpu:0");
  command->add_option("--filter", options->filter, "Run only cases whose SUITE/NAME matches REGEX")
      ->check([](const std::string& text) -> std::string {
        try {
          std::regex check(text);
        } catch (const std::regex_error& error) {
          return "--filter: not a regular expression: " + std::string(error.what());
        }
        return {};
      });
  command->add_flag("--json", options->json, "Print JSON (schema hal.onnx_tests/1)");
  command->add_option("--junit", options->junit, "Also write a JUnit XML report to FILE");
  set_work(*command, [options] { run_all(*options); });
}

}  // namespace hal::tool
