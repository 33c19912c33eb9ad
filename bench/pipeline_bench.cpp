// A pipeline of 4 stages on 4 paced sim devices (plugins/sim, pace=1: each piece of work takes
// its modelled time on the wall clock), 16 micro-batches, beside the same stages run one after
// another: pipeline_speedup = serial time / pipelined time. The goal is >= 3.2; the ideal,
// with transfers free, is 4 x 16 / (16 + 3) = 3.37. Both runs are timed on the host's clock,
// three times each (once with --quick), alternately, and the medians compared; their outputs must
// agree. Beside it, local_allreduce_4dev (local_allreduce_figures.cpp): the local engine's
// all-reduce over 4 more paced sim devices against the alpha-beta model of their links.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "bench_report.hpp"
#include "hal/hal.hpp"
#include "local_allreduce_figures.hpp"

namespace hal::bench {
namespace {

// Each stage is one matmul of an [8, 64] micro-batch by a [64, 64] weight: 65 536 flops, at
// 0.0125 GFLOP/s 5.24 ms (+ 20 us to launch); the 2 KiB between stages take 0.2 us at 10 GB/s
// (+ 20 us). The host's own arithmetic for it (a tenth of a millisecond) hides inside the pace:
// small products keep the 4 devices' real work light, so that a busy host's cores still keep
// up with the modelled fleet.
// sim:4..7 are the all-reduce's: 0.5 GB/s, so that each paced piece of its work (a copy or an
// add of a 256 KiB to 4 MiB chunk) takes 0.5 to 25 ms, long beside the host's own time for it
// and its timer's slack; and 1 GFLOP/s, so that an f32 add is bound by its bytes (12 bytes an
// element at 0.5 GB/s take 24 ns, its one flop 1 ns).
constexpr const char* kFleet =
    "devices=8,pace=1,gflops=0.0125:0.0125:0.0125:0.0125:1:1:1:1,"
    "bandwidth_gbps=10:10:10:10:0.5:0.5:0.5:0.5,launch_us=20";
constexpr int kStages = 4, kMicroBatches = 16, kAllReduceFirst = 4;
constexpr int64_t kRows = 8, kWidth = 64;

struct Setup {
  std::vector<Device> devices;
  std::vector<Tensor> weights;   // one per stage, on its device
  std::vector<Tensors> batches;  // on the first stage's device

  PipelineStage stage(int k) const {
    return {
        "matmul" + std::to_string(k), devices[k],
        [w = weights[k]](const Tensors& in, Stream& s) { return Tensors{matmul(in[0], w, s)}; }};
  }
};

Setup make_setup() {
  Setup setup;
  for (int k = 0; k < kStages; ++k) setup.devices.push_back(device("sim:" + std::to_string(k)));
  for (int k = 0; k < kStages; ++k) {
    Stream s = setup.devices[k].create_stream();
    // Weights near the identity's scale keep the values finite through four products.
    setup.weights.push_back(uniform({kWidth, kWidth}, DType::f32, 7 + k, s, -0.2, 0.2));
    s.synchronize();
  }
  Stream s = setup.devices[0].create_stream();
  for (int i = 0; i < kMicroBatches; ++i)
    setup.batches.push_back({uniform({kRows, kWidth}, DType::f32, 100 + i, s, -1, 1)});
  s.synchronize();
  return setup;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Micro-batch after micro-batch, stage after stage: each stage's stream waits for the previous
// stage (and the first stage for the previous micro-batch's last), through events alone, so
// that no host round trip is counted against the baseline.
double run_serial(const Setup& setup, std::vector<Tensor>& outputs) {
  std::vector<Stream> streams;
  std::vector<PipelineStage> stages;
  for (int k = 0; k < kStages; ++k) {
    streams.push_back(setup.devices[k].create_stream());
    stages.push_back(setup.stage(k));
  }
  outputs.clear();
  const auto start = std::chrono::steady_clock::now();
  Event previous;
  for (const Tensors& batch : setup.batches) {
    Tensor x = batch[0];
    for (int k = 0; k < kStages; ++k) {
      if (previous) streams[k].wait(previous);
      if (k > 0) x = x.to(setup.devices[k], streams[k]);
      x = stages[k].run({x}, streams[k])[0];
      previous = streams[k].record();
    }
    outputs.push_back(x);
  }
  previous.synchronize();
  return seconds_since(start);
}

double run_pipelined(const Setup& setup, std::vector<Tensor>& outputs) {
  std::vector<PipelineStage> stages;
  for (int k = 0; k < kStages; ++k) stages.push_back(setup.stage(k));
  Pipeline pipeline(std::move(stages));  // made before the clock starts: streams, events
  outputs.clear();
  const auto start = std::chrono::steady_clock::now();
  for (Tensors& out : pipeline.run(setup.batches)) outputs.push_back(out[0]);
  return seconds_since(start);
}

void check_agreement(const Setup& setup, const std::vector<Tensor>& serial,
                     const std::vector<Tensor>& pipelined) {
  Stream reader = setup.devices.back().create_stream();
  for (int i = 0; i < kMicroBatches; ++i)
    if (serial[i].to_vector<float>(reader) != pipelined[i].to_vector<float>(reader))
      throw Error(ErrorCode::Internal, "micro-batch " + std::to_string(i) +
                                           ": the pipeline's output differs from the "
                                           "stages run one after another");
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::vector<Figure> measure(int rounds) {
  const Setup setup = make_setup();
  std::vector<Tensor> serial_out, pipelined_out;
  run_pipelined(setup, pipelined_out);  // warm: kernels planned, allocator caches filled
  std::vector<double> serial, pipelined;
  for (int round = 0; round < rounds; ++round) {
    serial.push_back(run_serial(setup, serial_out));
    pipelined.push_back(run_pipelined(setup, pipelined_out));
  }
  check_agreement(setup, serial_out, pipelined_out);
  const double serial_ms = median(serial) * 1e3, pipelined_ms = median(pipelined) * 1e3;
  const double speedup = serial_ms / pipelined_ms;
  const double ideal = double(kStages) * kMicroBatches / (kMicroBatches + kStages - 1);
  std::vector<Figure> figures{{"pipeline_4x16_ms", pipelined_ms, "ms", "serial_4x16_ms", serial_ms,
                               pipelined_ms / serial_ms, "lower", ""},
                              {"pipeline_speedup", speedup, "x", "ideal_4x16/19", ideal,
                               speedup / ideal, "higher", ">= 3.2 (ideal 3.37)"}};
  std::vector<Device> all_reduce_devices;
  for (int k = 0; k < 4; ++k)
    all_reduce_devices.push_back(device("sim:" + std::to_string(kAllReduceFirst + k)));
  for (Figure& figure : measure_local_all_reduce(all_reduce_devices, rounds))
    figures.push_back(std::move(figure));
  return figures;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  if (!use_sim_fleet("pipeline", kFleet, kAllReduceFirst + 4)) return 2;
  // `hal bench --quick` asks Google Benchmark for short runs; here it means one round, not three.
  const int rounds = take_option(argc, argv, "--benchmark_min_time", "").empty() ? 3 : 1;
  return run_suite(argc, argv, "pipeline", "sim:0..7 (paced)", {},
                   [rounds] { return measure(rounds); });
}
