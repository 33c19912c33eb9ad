#include "local_allreduce_figures.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "hal/dist.hpp"
#include "hal/error.hpp"
#include "hal/tensor.hpp"

namespace hal::bench {
namespace {

constexpr int64_t kRanks = 4;
constexpr int kRepeats = 5;  // all-reduces per timing; the timing is their median

// The ring the local engine runs (src/dist/local/local_algorithms.cpp) over p lanes, chunks of
// m = n / p bytes, each piece as sim paces it (docs/many_devices.md): p - 1 reduce-scatter
// steps of a peer copy (alpha + m beta) and an add (alpha + max(3 m beta, m / 4 / gflops): it
// reads two chunks and writes one), then p - 1 all-gather steps of a peer copy. That is the
// alpha-beta(-gamma) ring, 2(p-1)(alpha + m beta) + (p-1) m gamma, and the reductions'
// launches, (p-1) alpha. Every lane does the same at the same time, so the lanes' waits for
// one another cost nothing.
double model_seconds(const Device& device, double bytes) {
  const PeakFigures& peak = device.info().peak;
  dist::LinkModel link;
  link.alpha_s = peak.launch_latency_us * 1e-6;
  link.beta_s_per_byte = 1.0 / (peak.bandwidth_gbps * 1e9);
  const double flops_per_byte = 1.0 / 4;  // an f32 add: one flop per output element
  link.gamma_s_per_byte =
      std::max(3 * link.beta_s_per_byte, flops_per_byte / (peak.f32_gflops * 1e9));
  return dist::predict_all_reduce(dist::AllReduceAlgorithm::ring, kRanks, bytes, link) +
         (kRanks - 1) * link.alpha_s;
}

struct Ranks {
  std::vector<dist::Communicator> communicators;
  std::vector<Stream> streams;
  std::vector<Tensor> inputs, outputs;
};

// Rank r's input holds r + 1 everywhere: every output element must be 1 + 2 + ... + p.
Ranks make_ranks(const std::vector<Device>& devices, int64_t elements) {
  Ranks ranks;
  ranks.communicators = dist::Communicator::local(devices);
  for (int64_t r = 0; r < kRanks; ++r) {
    Stream& stream = ranks.streams.emplace_back(devices[r].create_stream());
    ranks.inputs.push_back(full({elements}, double(r + 1), DType::f32, stream));
    ranks.outputs.push_back(empty({elements}, DType::f32, devices[r]));
  }
  for (Stream& stream : ranks.streams) stream.synchronize();
  return ranks;
}

// One all-reduce, from the first rank's call to the last rank's stream done.
double time_all_reduce(Ranks& ranks) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<dist::Work> work;
  for (int64_t r = 0; r < kRanks; ++r)
    work.push_back(ranks.communicators[r].all_reduce(ranks.inputs[r], ranks.outputs[r],
                                                     dist::ReduceOp::sum, ranks.streams[r]));
  for (int64_t r = 0; r < kRanks; ++r) {
    work[r].wait();
    ranks.streams[r].synchronize();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check_sums(Ranks& ranks) {
  const float expected = kRanks * (kRanks + 1) / 2;
  for (int64_t r = 0; r < kRanks; ++r) {
    const std::vector<float> values = ranks.outputs[r].to_vector<float>(ranks.streams[r]);
    const auto wrong =
        std::find_if(values.begin(), values.end(), [&](float v) { return v != expected; });
    if (wrong != values.end())
      throw Error(ErrorCode::Internal, "local_allreduce_4dev: rank " + std::to_string(r) +
                                           " element " + std::to_string(wrong - values.begin()) +
                                           " is " + std::to_string(*wrong) + ", not " +
                                           std::to_string(expected));
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

std::vector<Figure> measure_local_all_reduce(const std::vector<Device>& devices, int rounds) {
  if (devices.size() != kRanks)
    throw Error(ErrorCode::InvalidArgument, "local_allreduce_4dev: needs 4 devices");
  const dist::LinkModel stated = dist::link_model(devices);
  std::vector<Figure> figures;
  for (const auto& [label, mib] : {std::pair{"1m", 1}, std::pair{"16m", 16}}) {
    const double bytes = mib * double(1 << 20);
    if (dist::choose_all_reduce(kRanks, bytes, stated) != dist::AllReduceAlgorithm::ring)
      throw Error(ErrorCode::Internal, std::string("local_allreduce_4dev_") + label +
                                           ": the engine would not run the ring here; the "
                                           "model is the ring's");
    Ranks ranks = make_ranks(devices, static_cast<int64_t>(bytes) / 4);
    for (int warm = 0; warm < 2; ++warm)  // streams, allocator caches, the executor thread
      time_all_reduce(ranks);
    std::vector<double> timings;
    for (int i = 0; i < rounds * kRepeats; ++i) timings.push_back(time_all_reduce(ranks));
    check_sums(ranks);
    const double measured_ms = median(timings) * 1e3;
    const double model_ms = model_seconds(devices[0], bytes) * 1e3;
    figures.push_back({std::string("local_allreduce_4dev_") + label, measured_ms, "ms",
                       std::string("alpha_beta_model_") + label, model_ms, measured_ms / model_ms,
                       "lower", "within 1.2x of the model"});
  }
  return figures;
}

}  // namespace hal::bench
