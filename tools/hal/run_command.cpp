// `hal run MODEL.onnx --input NAME=FILE.npy ... [--output DIR] [--device ID|auto] [--plan]
// [--repeat N] [--json]`: runs an ONNX model with inputs from NumPy files (string inputs from
// NumPy's '<U' arrays), on one device or through its execution plan, prints each output's
// name, dtype and shape and the latency over the repeats, and writes each output to
// DIR/<name>.npy (strings as '<U'). An optional input (Model::optional_inputs) may be given,
// replacing its default, or left out. `--plan` without inputs prints the plan for the declared
// shapes and runs nothing.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "commands.hpp"
#include "core/host_cpu.hpp"
#include "hal/error.hpp"
#include "hal/execution_plan.hpp"
#include "hal/model.hpp"
#include "hal/npy.hpp"
#include "hal/registry.hpp"
#include "hal/statistics.hpp"
#include "json_text.hpp"
#include "option_values.hpp"
#include "output_files.hpp"
#include "plan_json.hpp"

namespace hal::tool {
namespace {

struct Options {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE
  std::string output_dir;
  std::string device_id = "cpu:0";
  std::string repeat_text = "1";
  int repeat = 1;
  bool plan = false;
  bool json = false;
};

// The value at fraction `p` of the sorted values, nearest rank (p90; the median is
// evidence::median's, the mean of the middle two of an even count).
double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// The declared input of `name`, required or optional (null where the model has none).
const ModelValue* declared_input(const Model& model, const std::string& name) {
  for (const auto* values : {&model.inputs(), &model.optional_inputs()})
    for (const ModelValue& value : *values)
      if (value.name == name) return &value;
  return nullptr;
}

// Each input as the model declares it (an optional one too, replacing its default): a string
// input from an array of NumPy strings, any other from one of numbers.
std::map<std::string, RunValue> read_inputs(const Options& options, const Model& model,
                                            Stream& stream) {
  std::map<std::string, RunValue> inputs;
  for (const std::string& spec : options.inputs) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == spec.size())
      throw Error(ErrorCode::InvalidArgument, "--input '" + spec + "': expected NAME=FILE.npy");
    const std::string name = spec.substr(0, equals);
    if (inputs.contains(name))
      throw Error(ErrorCode::InvalidArgument, "--input: '" + name + "' given twice");
    const std::string file = spec.substr(equals + 1);
    const ModelValue* declared = declared_input(model, name);
    if (declared && declared->strings)
      inputs[name] = read_npy_strings(file);
    else
      inputs[name] = read_npy(file, stream);
  }
  return inputs;
}

Shape shape_of(const RunValue& value) {
  if (const auto* strings = std::get_if<StringTensor>(&value)) return strings->shape;
  if (const auto* tensor = std::get_if<Tensor>(&value)) return tensor->shape();
  return {};
}

// The runs, timed: each waits for its devices before the clock stops.
template <class RunOnce>
std::vector<double> timed_runs(int repeat, RunOnce&& run_once) {
  std::vector<double> latencies_ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run_once();
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return latencies_ms;
}

// The outputs as run writes them: each a tensor or a string tensor. All are checked before
// any file is written, so a refused output leaves no outputs of the run behind.
void check_outputs(const Options& options, const Model& model,
                   const std::map<std::string, RunValue>& outputs) {
  for (const ModelValue& declared : model.outputs()) {
    const RunValue& value = outputs.at(declared.name);
    const auto* tensor = std::get_if<Tensor>(&value);
    if ((!tensor || !tensor->defined()) && !std::holds_alternative<StringTensor>(value))
      throw Error(ErrorCode::Unsupported, options.model + ": output '" + declared.name + "' is " +
                                              (tensor ? "an empty optional" : "a sequence") +
                                              "; hal run writes tensors and string tensors");
  }
}

// What would be refused once the runs are done, refused before them: an --output that cannot
// be a directory, and an output the model declares as a sequence.
void check_before_running(const Options& options, const Model& model) {
  if (!options.output_dir.empty()) check_output_directory(options.output_dir, "--output");
  for (const ModelValue& declared : model.outputs())
    if (declared.sequence)
      throw Error(ErrorCode::Unsupported, options.model + ": output '" + declared.name +
                                              "' is a sequence; hal run writes tensors and "
                                              "string tensors");
}

void run_model(const Options& options) {
  const Model model = load_onnx(options.model);
  // auto and --plan run through the plan (each node on its device); a device ID alone runs
  // every node on one stream of it.
  const bool planned = options.plan || options.device_id == "auto";
  const Device input_device = planned ? hal::detail::host_cpu() : device(options.device_id);
  Stream stream = input_device.create_stream();
  const std::map<std::string, RunValue> inputs = read_inputs(options, model, stream);
  stream.synchronize();
  ExecutionPlan plan;
  if (planned) {
    PlanOptions plan_options;
    plan_options.device = options.device_id;
    for (const auto& [name, value] : inputs)
      if (!std::holds_alternative<TensorSequence>(value))
        plan_options.input_shapes[name] = shape_of(value);
    plan = plan_model(model, plan_options);
    if (inputs.empty() && options.plan) {  // plan only: nothing to run it on
      if (options.json)
        std::cout << plan_json(plan, options.device_id).dump(2, ' ', false, kReplaceBadUtf8)
                  << "\n";
      else
        print_plan(std::cout, plan);
      return;
    }
  }
  check_before_running(options, model);
  std::map<std::string, RunValue> outputs;
  std::vector<PlannedNode> fallbacks;
  const std::vector<double> latencies_ms = timed_runs(options.repeat, [&] {
    if (planned) {
      PlannedValuesRun run = run_planned_values(model, plan, inputs);
      outputs = std::move(run.outputs);
      fallbacks = std::move(run.fallbacks);
    } else {
      outputs = model.run_values(inputs, stream);
      stream.synchronize();
    }
  });
  check_outputs(options, model, outputs);
  nlohmann::ordered_json written = nlohmann::ordered_json::array();
  if (!options.output_dir.empty()) make_output_directory(options.output_dir, "--output");
  std::set<std::string> files;
  for (const ModelValue& declared : model.outputs()) {
    const RunValue& value = outputs.at(declared.name);
    const auto* tensor = std::get_if<Tensor>(&value);
    const auto* strings = std::get_if<StringTensor>(&value);
    std::string path;
    if (!options.output_dir.empty()) {
      path = (std::filesystem::path(options.output_dir) / output_file_name(declared.name, files))
                 .string();
      if (strings) {
        write_npy(path, *strings);
      } else {
        Stream output_stream = tensor->device().create_stream();
        write_npy(path, *tensor, output_stream);
      }
    }
    written.push_back(
        {{"name", declared.name},
         {"dtype", strings ? std::string("string") : std::string(hal::to_string(tensor->dtype()))},
         {"shape", strings ? strings->shape : tensor->shape()},
         {"file", path.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(path)}});
  }
  const double min = *std::min_element(latencies_ms.begin(), latencies_ms.end());
  const double median = evidence::median(latencies_ms), p90 = percentile(latencies_ms, 0.9);
  if (options.json) {
    nlohmann::ordered_json report{{"schema", "hal.run/1"},
                                  {"model", options.model},
                                  {"device", planned ? options.device_id : input_device.id()},
                                  {"nodes", model.node_count()},
                                  {"repeat", options.repeat},
                                  {"latency_ms", {{"min", min}, {"median", median}, {"p90", p90}}},
                                  {"outputs", written}};
    if (planned) {
      report["plan"] = plan_json(plan, options.device_id);
      nlohmann::ordered_json moved = nlohmann::ordered_json::array();
      for (const PlannedNode& node : fallbacks)
        moved.push_back({{"name", node.name},
                         {"op", node.op},
                         {"device", node.device},
                         {"reason", node.reason}});
      report["fallbacks"] = moved;
    }
    std::cout << report.dump(2, ' ', false, kReplaceBadUtf8) << "\n";
    return;
  }
  if (planned && options.plan) print_plan(std::cout, plan);
  std::cout << options.model << " on " << (planned ? "the plan's devices" : input_device.id())
            << " (" << model.node_count() << " nodes)\n";
  for (const PlannedNode& node : fallbacks)
    std::cout << "  fell back: " << node.name << " (" << node.op << ") on " << node.device << ": "
              << node.reason << "\n";
  for (const auto& output : written) {
    std::cout << "  " << output["name"].get<std::string>() << ": "
              << output["dtype"].get<std::string>() << " "
              << hal::to_string(output["shape"].get<Shape>());
    if (!output["file"].is_null()) std::cout << " -> " << output["file"].get<std::string>();
    std::cout << "\n";
  }
  std::cout << "latency over " << options.repeat << " run(s): min " << min << " ms, median "
            << median << " ms, p90 " << p90 << " ms\n";
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "run",
      "Run an ONNX model on a device with inputs from .npy files; write its outputs as .npy");
  auto options = std::make_shared<Options>();
  command->add_option("model", options->model, "The model (.onnx)")->required();
  command->add_option(
      "--input", options->inputs,
      "An input: NAME=FILE.npy (repeat per input; an optional input replaces its default)");
  command->add_option("--output", options->output_dir, "Write each output to DIR/<name>.npy");
  command->add_option("--device", options->device_id,
                      "The device (cpu:0, opencl:0 ...; auto: each node where the plan puts it)");
  command->add_option("--repeat", options->repeat_text, "Runs to time (1 to 100000)");
  command->add_flag("--plan", options->plan,
                    "Print the execution plan (without --input: plan for the declared shapes, "
                    "run nothing)");
  command->add_flag("--json", options->json,
                    "Print JSON (schema hal.run/1; hal.plan/1 for a plan)");
  command->parse_complete_callback([options] {
    options->repeat = static_cast<int>(count_option("--repeat", options->repeat_text, 1, 100000));
  });
  set_work(*command, [options] { run_model(*options); });
}

}  // namespace hal::tool
