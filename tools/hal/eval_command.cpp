// `hal eval MODEL.onnx --data DIR --devices ID,ID,... [--batch N] [--reference DIR]
// [--output DIR] [--json]`: a data set (DIR's .npy files joined along axis 0) split into
// contiguous shards, one per device, each run by its own thread on its own stream in batches;
// the outputs gathered in the data's order, scored against a reference, and each device's
// throughput reported (hal.eval/1, docs/evidence.md). Under mpirun the rows are first split
// across the processes, and rank 0 gathers every process's outputs (eval_processes.hpp).
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "commands.hpp"
#include "core/host_cpu.hpp"
#include "eval_data.hpp"
#include "eval_processes.hpp"
#include "hal/error.hpp"
#include "hal/model.hpp"
#include "hal/npy.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "json_text.hpp"
#include "option_values.hpp"
#include "output_files.hpp"

namespace hal::tool {
namespace {

struct EvalOptions {
  std::string model, data, reference, output;
  std::vector<std::string> devices;
  std::string batch_text = "32";
  int64_t batch = 32;
  bool json = false;
};

// One device's share of the work and what it did.
struct ShardRun {
  std::string device;
  ShardRange rows;
  std::map<std::string, std::vector<Tensor>> outputs;  // by name, a tensor a batch, on the host
  double seconds = 0;                                  // from its first batch to its last result
  double first_batch_seconds = 0;  // kernels compiled, weights uploaded: not in the throughput
  int64_t batches = 0, first_batch_rows = 0;
  std::exception_ptr error;
};

// Runs rows [begin, end) of `data` (on the host) on `shard.device` in batches; the outputs come
// back to the host. The model is loaded by each thread: a device's run shares nothing with
// another's but the input.
double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void run_shard(const std::string& model_path, const Tensor& data, const std::string& input_name,
               int64_t batch, ShardRun& shard) {
  try {
    const Model model = load_onnx(model_path);
    const Device target = device(shard.device), host = hal::detail::host_cpu();
    Stream stream = target.create_stream();
    const auto started = std::chrono::steady_clock::now();
    for (int64_t begin = shard.rows.begin; begin < shard.rows.end; begin += batch) {
      const int64_t end = std::min(shard.rows.end, begin + batch);
      const Tensor input = data.slice(0, begin, end).to(target, stream);
      for (const auto& [name, value] : model.run({{input_name, input}}, stream)) {
        if (value.dim() == 0 || value.size(0) != end - begin)
          throw Error(ErrorCode::Unsupported,
                      "hal eval: output '" + name + "' is " + value.describe() +
                          ", not one row per example of a batch of " + std::to_string(end - begin) +
                          "; eval gathers rows");
        shard.outputs[name].push_back(value.to(host, stream));
      }
      if (++shard.batches == 1) {
        stream.synchronize();
        shard.first_batch_seconds = since(started);
        shard.first_batch_rows = end - begin;
      }
    }
    stream.synchronize();
    shard.seconds = since(started);
  } catch (...) {
    shard.error = std::current_exception();
  }
}

// Where `ProcessPart` errors go: a hal::Error kept with its code, anything else as Internal.
void keep_error(ProcessPart& part) {
  part.failed = true;
  try {
    throw;
  } catch (const Error& error) {
    part.error_code = error.code();
    part.error_message = error.message();
  } catch (const std::exception& error) {
    part.error_code = ErrorCode::Internal;
    part.error_message = error.what();
  }
}

// This process's rows (`data`, rows `part_rows` of the data set) split over its devices, one
// thread each; the outputs joined in the data's order on the host. Each device's entry names
// `rank`, this process's.
void run_devices(const EvalOptions& o, const Tensor& data, const std::string& input_name,
                 const std::vector<std::string>& ids, ShardRange part_rows, int rank,
                 const std::vector<ModelValue>& declared, Stream& host, ProcessPart& part) {
  std::vector<ShardRun> shards;
  const std::vector<ShardRange> ranges = shard_rows(part_rows.end - part_rows.begin, ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    shards.emplace_back();
    shards.back().device = ids[i];
    shards.back().rows = ranges[i];  // of `data`, which holds this process's rows alone
  }
  {
    std::vector<std::jthread> threads;
    for (ShardRun& shard : shards)
      threads.emplace_back(run_shard, std::cref(o.model), std::cref(data), std::cref(input_name),
                           o.batch, std::ref(shard));
  }
  for (const ShardRun& shard : shards)
    if (shard.error) {
      try {
        std::rethrow_exception(shard.error);
      } catch (const Error& error) {
        throw Error(error.code(), shard.device + ": " + error.message());
      }
    }
  for (const ModelValue& output : declared) {
    std::vector<Tensor> pieces;
    for (const ShardRun& shard : shards)
      if (const auto found = shard.outputs.find(output.name); found != shard.outputs.end())
        pieces.insert(pieces.end(), found->second.begin(), found->second.end());
    if (!pieces.empty())
      part.outputs.emplace_back(output.name,
                                pieces.size() == 1 ? pieces.front() : concat(pieces, 0, host));
  }
  for (const ShardRun& s : shards) {
    const int64_t n = s.rows.end - s.rows.begin;
    // The throughput after the first batch, where there are more.
    const double timed = s.batches > 1 ? s.seconds - s.first_batch_seconds : s.seconds;
    const int64_t timed_rows = s.batches > 1 ? n - s.first_batch_rows : n;
    part.devices.push_back(
        {{"rank", rank},
         {"device", s.device},
         {"first_row", part_rows.begin + s.rows.begin},
         {"rows", n},
         {"batches", s.batches},
         {"seconds", s.seconds},
         {"first_batch_seconds", s.first_batch_seconds},
         {"rows_per_s", timed > 0 ? static_cast<double>(timed_rows) / timed : 0.0}});
  }
}

// The outputs of every part joined in rank order (each part holds contiguous rows, rank after
// rank), by the model's output names.
std::vector<std::pair<std::string, Tensor>> join_parts(const std::vector<ProcessPart>& parts,
                                                       const std::vector<ModelValue>& declared,
                                                       Stream& host) {
  std::vector<std::pair<std::string, Tensor>> joined;
  for (const ModelValue& output : declared) {
    std::vector<Tensor> pieces;
    for (const ProcessPart& part : parts)
      for (const auto& [name, tensor] : part.outputs)
        if (name == output.name && tensor.numel() > 0) pieces.push_back(tensor);
    if (!pieces.empty())
      joined.emplace_back(output.name,
                          pieces.size() == 1 ? pieces.front() : concat(pieces, 0, host));
  }
  return joined;
}

// Rank 0's verdict on the parts: the first failed rank's error, naming it.
void throw_first_failure(const std::vector<ProcessPart>& parts) {
  int failures = 0;
  for (const ProcessPart& part : parts) failures += part.failed;
  for (size_t rank = 0; rank < parts.size(); ++rank)
    if (parts[rank].failed)
      throw Error(
          parts[rank].error_code,
          (parts.size() > 1 ? "rank " + std::to_string(rank) + ": " : std::string()) +
              parts[rank].error_message +
              (failures > 1 ? " (and " + std::to_string(failures - 1) + " more rank(s) failed)"
                            : std::string()));
}

// What would fail or be skipped once every row has run, refused before: a --reference with no
// rows to score against it (it was ignored), an --output that cannot be a directory.
void check_before_evaluating(const EvalOptions& o, int64_t rows) {
  if (!o.reference.empty() && rows == 0)
    throw Error(ErrorCode::InvalidArgument, "--reference " + o.reference + ": --data " + o.data +
                                                " has no rows to score against it");
  std::error_code error;
  if (!o.reference.empty() && !std::filesystem::is_directory(o.reference, error))
    throw Error(ErrorCode::InvalidArgument,
                "--reference " + o.reference + ": not a directory of .npy files");
  if (!o.output.empty()) check_output_directory(o.output, "--output");
}

// A difference as text: JSON's null is an infinite one (NaN or infinity on one side alone).
std::string difference_text(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value.get<double>());
  return text;
}

void print_agreement(const std::string& directory, const nlohmann::ordered_json& reference) {
  std::printf("against %s: %s, max|out - ref| = %s, mean %s, argmax agreement %.4f\n",
              directory.c_str(), reference["agree"].get<bool>() ? "agree" : "DIFFER",
              difference_text(reference["max_abs_diff"]).c_str(),
              difference_text(reference["mean_abs_diff"]).c_str(),
              reference["argmax_agreement"].get<double>());
  if (const auto nonfinite = reference["nonfinite_elements"].get<size_t>(); nonfinite > 0)
    std::printf("  %zu element(s) NaN or infinite in one of output and reference alone\n",
                nonfinite);
}

void evaluate(const EvalOptions& o) {
  // Under mpirun each process takes a contiguous share of the rows and splits it over its own
  // --devices; rank 0 gathers, scores and reports.
  const dist::Communicator world = eval_processes();
  const int rank = world ? world.rank() : 0, processes = world ? world.size() : 1;
  Stream host = hal::detail::host_cpu().create_stream();

  ProcessPart mine;
  std::vector<ModelValue> declared;
  Tensor data;  // this process's rows, part_rows of the data set's `rows`
  int64_t rows = 0;
  ShardRange part_rows;
  std::string input_name;
  std::vector<std::string> ids;
  try {
    const Model model = load_onnx(o.model);  // errors name the file before any thread starts
    if (model.inputs().size() != 1)
      throw Error(ErrorCode::Unsupported, "hal eval: " + o.model + " has " +
                                              std::to_string(model.inputs().size()) +
                                              " inputs; eval feeds one from --data");
    declared = model.outputs();
    const ModelValue& input = model.inputs().front();
    input_name = input.name;
    // Each process reads only the files, and the rows of them, that its share holds.
    const NpyDirectory all = scan_npy_directory(o.data, "--data");
    rows = all.rows;
    check_before_evaluating(o, rows);
    part_rows = shard_rows(rows, processes)[rank];
    data = read_rows(all, part_rows, host);
    if (data.dtype() != input.dtype) data = cast(data, input.dtype, host);
    host.synchronize();  // the threads read it from their own streams
    ids = names_option("--devices", o.devices);
    for (const std::string& id : ids) device(id);  // an unknown device is refused before any run
  } catch (...) {
    keep_error(mine);
  }
  if (world) world.barrier(host).wait();  // the ranks start together: one wall time for all
  const auto started = std::chrono::steady_clock::now();
  if (!mine.failed) try {
      run_devices(o, data, input_name, ids, part_rows, rank, declared, host, mine);
    } catch (...) {
      keep_error(mine);
    }

  std::vector<ProcessPart> parts;
  if (world) {
    const bool failed = mine.failed;
    const std::string message = mine.error_message;
    parts = gather_parts(world, std::move(mine), host);
    if (rank != 0) {  // rank 0 reports; the others' stdout stays quiet
      if (!failed) return;
      std::cerr << "hal eval: rank " << rank << ": " << message << "\n";
      throw ExitStatus{1};
    }
  } else {
    parts.push_back(std::move(mine));
  }
  throw_first_failure(parts);
  const double seconds = since(started);

  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  std::map<std::string, Tensor> gathered;
  std::set<std::string> files;
  for (const auto& [name, all] : join_parts(parts, declared, host)) {
    gathered[name] = all;
    outputs.push_back({{"name", name}, {"shape", all.shape()}});
    if (!o.output.empty()) {
      make_output_directory(o.output, "--output");
      const std::string file = output_file_name(name, files);
      write_npy(std::filesystem::path(o.output) / file, all, host);
      outputs.back()["file"] = file;
    }
  }
  nlohmann::ordered_json reference = nullptr;
  if (!o.reference.empty() && !gathered.empty()) {
    const Tensor expected = read_npy_directory(o.reference, "--reference", host);
    reference = {{"directory", o.reference}, {"output", declared.front().name}};
    reference.update(score_against(gathered.at(declared.front().name), expected, host));
  }

  nlohmann::ordered_json per_device = nlohmann::ordered_json::array();
  for (const ProcessPart& part : parts)
    for (const auto& entry : part.devices) per_device.push_back(entry);
  const nlohmann::ordered_json report{
      {"schema", "hal.eval/1"},
      {"model", o.model},
      {"data", o.data},
      {"rows", rows},
      {"batch", o.batch},
      {"processes", processes},
      {"devices", per_device},
      {"seconds", seconds},
      {"rows_per_s", seconds > 0 ? static_cast<double>(rows) / seconds : 0.0},
      {"outputs", outputs},
      {"reference", reference}};
  if (o.json) {
    std::cout << report.dump(2, ' ', false, kReplaceBadUtf8) << "\n";
    return;
  }
  std::printf("hal eval: %s on %lld rows of %s, batches of %lld", o.model.c_str(),
              static_cast<long long>(rows), o.data.c_str(), static_cast<long long>(o.batch));
  if (processes > 1) std::printf(", %d processes", processes);
  std::printf("\n  %-14s %10s %8s %10s %12s\n", "device", "rows", "batches", "seconds", "rows/s");
  for (const auto& d : per_device) {
    std::string name = d["device"].get<std::string>();
    if (processes > 1) name = "rank " + std::to_string(d["rank"].get<int>()) + " " + name;
    std::printf("  %-14s %10lld %8lld %10.3f %12.1f\n", name.c_str(),
                static_cast<long long>(d["rows"].get<int64_t>()),
                static_cast<long long>(d["batches"].get<int64_t>()), d["seconds"].get<double>(),
                d["rows_per_s"].get<double>());
  }
  std::printf("  %-14s %10lld %8s %10.3f %12.1f\n", "all", static_cast<long long>(rows), "",
              seconds, report["rows_per_s"].get<double>());
  if (reference.is_null()) return;
  if (reference["kind"] == "labels")
    std::printf("accuracy against %s: %.4f (%zu of %zu)\n", o.reference.c_str(),
                reference["accuracy"].get<double>(), reference["correct"].get<size_t>(),
                reference["positions"].get<size_t>());
  else
    print_agreement(o.reference, reference);
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "eval", "Run a model over a data set sharded across devices; accuracy and throughput");
  auto o = std::make_shared<EvalOptions>();
  command->add_option("model", o->model, "The ONNX model (one input)")->required();
  command
      ->add_option("--data", o->data,
                   "A directory of .npy files: the examples, rows of axis 0, files in name order")
      ->required();
  command
      ->add_option(
          "--devices", o->devices,
          "ID,ID,...: one shard and one thread each (of this process's rows, under mpirun)")
      ->required();
  command->add_option("--batch", o->batch_text, "Rows a run (default 32)");
  command->add_option("--reference", o->reference,
                      "A directory of .npy files: integer labels (accuracy) or expected outputs "
                      "(agreement) for the first output");
  command->add_option("--output", o->output, "Write each gathered output to DIR/<name>.npy");
  command->add_flag("--json", o->json, "Print JSON (schema hal.eval/1)");
  command->parse_complete_callback([o] {
    o->batch = static_cast<int64_t>(count_option("--batch", o->batch_text, 1, 1 << 24));
    names_option("--devices", o->devices);
  });
  set_work(*command, [o] { evaluate(*o); });
}

}  // namespace hal::tool
