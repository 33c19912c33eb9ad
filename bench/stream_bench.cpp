// CPU stream costs: enqueue, round trip, event record+wait, and a chain of dependent tiny
// kernels, each beside a plain std::thread hand-off queue (and a direct call) in the same run.
#include <benchmark/benchmark.h>

#include <future>

#include "bench_report.hpp"
#include "hal/backend.hpp"
#include "hal/hal.hpp"
#include "handoff_queue.hpp"

namespace hal::bench {
namespace {

constexpr int kDrainEvery = 1024;  // keep queues short while timing enqueues
constexpr int kChain = 10'000;

Device cpu() { return device("cpu:0"); }

const Kernel& empty_kernel() {
  static const Kernel kernel = host_kernel("empty", [](const KernelChunk&) {});
  return kernel;
}

const Kernel& increment_kernel() {
  static const Kernel kernel = host_kernel(
      "increment", [](const KernelChunk& chunk) { chunk.args.ptr<uint64_t>(0)[0] += 1; });
  return kernel;
}

void direct_call(benchmark::State& state) {
  const KernelArgs no_args({});
  const auto& fn = static_cast<const HostKernelImpl&>(*empty_kernel().impl()).fn();
  for (auto _ : state) {
    fn(KernelChunk{{0, 0, 0}, {1, 1, 1}, no_args});
    benchmark::ClobberMemory();
  }
}

void enqueue_empty_kernel(benchmark::State& state) {
  Stream stream = cpu().create_stream();
  int since_drain = 0;
  for (auto _ : state) {
    stream.launch(empty_kernel(), LaunchConfig::linear(1));
    if (++since_drain == kDrainEvery) {
      state.PauseTiming();
      stream.synchronize();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  stream.synchronize();
}

void handoff_enqueue(benchmark::State& state) {
  HandoffQueue queue;
  int since_drain = 0;
  for (auto _ : state) {
    queue.push([] {});
    if (++since_drain == kDrainEvery) {
      state.PauseTiming();
      queue.wait_idle();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  queue.wait_idle();
}

// An op's enqueue: add of two 16-float tensors, its result dropped (the stream keeps what it
// needs until the kernel has run). The baseline is handoff_enqueue: a closure pushed onto a
// mutex-protected deque, the bare cost of any asynchronous stream.
void op_tiny_enqueue(benchmark::State& state) {
  Stream stream = cpu().create_stream();
  const Tensor a = full({16}, 1.5, DType::f32, stream);
  const Tensor b = full({16}, 2.5, DType::f32, stream);
  { const Tensor warm = add(a, b, stream); }
  stream.synchronize();
  int since_drain = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(add(a, b, stream));
    if (++since_drain == kDrainEvery) {
      state.PauseTiming();
      stream.synchronize();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  stream.synchronize();
  const Tensor check = add(a, b, stream);
  if (check.to_vector<float>(stream) != std::vector<float>(16, 4.0f))
    state.SkipWithError("wrong sum");
}

void round_trip_empty_kernel(benchmark::State& state) {
  Stream stream = cpu().create_stream();
  for (auto _ : state) {
    stream.launch(empty_kernel(), LaunchConfig::linear(1));
    stream.synchronize();
  }
}

void handoff_round_trip(benchmark::State& state) {
  HandoffQueue queue;
  for (auto _ : state) {
    queue.push([] {});
    queue.wait_idle();
  }
}

void event_record_wait(benchmark::State& state) {
  Stream first = cpu().create_stream();
  Stream second = cpu().create_stream();
  Event event = cpu().create_event();
  for (auto _ : state) {
    first.record(event);
    second.wait(event);
    second.synchronize();
  }
}

void handoff_signal_wait(benchmark::State& state) {
  HandoffQueue first, second;
  for (auto _ : state) {
    auto signal = std::make_shared<std::promise<void>>();
    std::shared_future<void> done = signal->get_future().share();
    first.push([signal] { signal->set_value(); });
    second.push([done] { done.wait(); });
    second.wait_idle();
  }
}

void chain_tiny_kernels(benchmark::State& state) {
  Stream stream = cpu().create_stream();
  Buffer counter = cpu().allocate(sizeof(uint64_t));
  stream.fill(counter, uint64_t{0}, 1);
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i)
      stream.launch(increment_kernel(), LaunchConfig::linear(1), {counter});
    stream.synchronize();
  }
  if (*counter.data<uint64_t>() != uint64_t(kChain) * state.iterations())
    state.SkipWithError("wrong count");
}

void handoff_chain(benchmark::State& state) {
  HandoffQueue queue;
  uint64_t counter = 0;
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) queue.push([&counter] { counter += 1; });
    queue.wait_idle();
  }
  if (counter != uint64_t(kChain) * state.iterations()) state.SkipWithError("wrong count");
}

// The same hand-off, but each task holds what a stream's task must hold until it has run: a
// reference to the kernel and one to the buffer (the record-stream rule). Not the goal's
// baseline: it shows how much of the gap is the cost of that ownership.
void handoff_chain_owning(benchmark::State& state) {
  HandoffQueue queue;
  Buffer counter = cpu().allocate(sizeof(uint64_t));
  *counter.data<uint64_t>() = 0;
  auto kernel = std::static_pointer_cast<HostKernelImpl>(increment_kernel().impl());
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i)
      queue.push([kernel, counter] {
        const KernelArg arg(counter);
        const KernelArgs args({&arg, 1});
        kernel->fn()(KernelChunk{{0, 0, 0}, {1, 1, 1}, args});
      });
    queue.wait_idle();
  }
  if (*counter.data<uint64_t>() != uint64_t(kChain) * state.iterations())
    state.SkipWithError("wrong count");
}

#define HAL_BENCH(fn) \
  HAL_GUARDED_BENCHMARK(fn)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime()
HAL_BENCH(direct_call);
HAL_BENCH(enqueue_empty_kernel);
HAL_BENCH(handoff_enqueue);
HAL_BENCH(op_tiny_enqueue);
HAL_BENCH(round_trip_empty_kernel);
HAL_BENCH(handoff_round_trip);
HAL_BENCH(event_record_wait);
HAL_BENCH(handoff_signal_wait);
HAL_BENCH(chain_tiny_kernels)->Unit(benchmark::kMicrosecond);
HAL_BENCH(handoff_chain)->Unit(benchmark::kMicrosecond);
HAL_BENCH(handoff_chain_owning)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using hal::bench::Comparison;
  return hal::bench::run_suite(
      argc, argv, "stream", "cpu:0",
      {
          {"enqueue_empty_kernel", "enqueue_empty_kernel", "handoff_enqueue", "median <= 1 us"},
          {"op_tiny_enqueue", "op_tiny_enqueue", "handoff_enqueue",
           "ratio <= 2 and median <= 1 us"},
          {"enqueue_vs_direct_call", "enqueue_empty_kernel", "direct_call", ""},
          {"round_trip_empty_kernel", "round_trip_empty_kernel", "handoff_round_trip",
           "median <= 5 us"},
          {"event_record_wait", "event_record_wait", "handoff_signal_wait", ""},
          {"chain_10000_tiny_kernels", "chain_tiny_kernels", "handoff_chain", "ratio <= 1.2"},
          {"chain_vs_owning_handoff", "chain_tiny_kernels", "handoff_chain_owning",
           "(explains the gap)"},
      });
}
