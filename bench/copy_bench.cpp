// `hal bench copy --device opencl:N|cuda:N`: copies through hal beside the same copies through
// the raw driver API in the same run (clEnqueue{Write,Read,Copy}Buffer, cuMemcpy*Async), each
// followed by a wait: host to device, device to host and device to device, 4 KiB (what a
// copy's dispatch costs) and 64 MiB (bandwidth), and memcpy of the same host memory. On CUDA
// the host side is pinned memory for hal and the baseline alike, as CUDA programs transfer, and
// pageable memory too (`*_pageable`), which hal stages itself where the stream has work ahead.
#include <benchmark/benchmark.h>

#include <cstring>
#include <iostream>
#include <vector>

#include "bench_report.hpp"
#include "bench_target.hpp"

namespace hal::bench {
namespace {

constexpr size_t kSmall = 4 << 10;
constexpr size_t kLarge = 64 << 20;

BenchTarget g_target;

// Host memory for copies: pageable, or pinned where the device's programs would pin it.
class HostMemory {
 public:
  HostMemory() {
    if (g_target.device.info().backend() == "cuda")
      pinned_ = g_target.device.allocate(kLarge, MemoryKind::pinned_host);
    else
      pageable_.resize(kLarge);
    std::memset(data(), 7, kLarge);
  }
  unsigned char* data() { return pinned_ ? pinned_.data<unsigned char>() : pageable_.data(); }

 private:
  Buffer pinned_;
  std::vector<unsigned char> pageable_;
};
unsigned char* host_in() {
  static HostMemory memory;
  return memory.data();
}
unsigned char* host_out() {
  static HostMemory memory;
  return memory.data();
}
// Pageable memory on every backend (CUDA's pageable rows).
unsigned char* pageable(int which) {
  static std::vector<unsigned char> memory[2] = {std::vector<unsigned char>(kLarge, 7),
                                                 std::vector<unsigned char>(kLarge, 7)};
  return memory[which].data();
}

size_t bytes_of(const benchmark::State& state) { return static_cast<size_t>(state.range(0)); }
void count_bytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_of(state)));
}

// Two device buffers, the first holding data, and a stream with nothing pending: set up outside
// the timed loop.
struct DeviceBuffers {
  DeviceBuffers() {
    stream.copy_from_host(a, host_in(), kLarge);
    stream.synchronize();
  }
  Stream stream = g_target.device.create_stream();
  Buffer a = g_target.device.allocate(kLarge);
  Buffer b = g_target.device.allocate(kLarge);
};

// One copy through hal per iteration, each followed by a wait.
template <class Copy>
void hal_copies(benchmark::State& state, Copy copy) {
  DeviceBuffers d;
  for (auto _ : state) {
    copy(d, bytes_of(state));
    d.stream.synchronize();
  }
  count_bytes(state);
}

void hal_h2d(benchmark::State& state) {
  hal_copies(state, [](DeviceBuffers& d, size_t n) { d.stream.copy_from_host(d.a, host_in(), n); });
}
void hal_d2h(benchmark::State& state) {
  hal_copies(state, [](DeviceBuffers& d, size_t n) { d.stream.copy_to_host(host_out(), d.a, n); });
}
void hal_d2d(benchmark::State& state) {
  hal_copies(state, [](DeviceBuffers& d, size_t n) { d.stream.copy(d.b, d.a, n); });
}

// From and to pageable memory, with a copy on the device ahead of each (so that hal's stream
// has work in flight, as in a program, and stages the copy), against the driver's own pageable
// copies after the same device copy (which the baseline waits for: its calls each wait).
void hal_h2d_pageable(benchmark::State& state) {
  hal_copies(state, [](DeviceBuffers& d, size_t n) {
    d.stream.copy(d.b, d.a, kSmall);
    d.stream.copy_from_host(d.a, pageable(0), n);
  });
}
void hal_d2h_pageable(benchmark::State& state) {
  hal_copies(state, [](DeviceBuffers& d, size_t n) {
    d.stream.copy(d.b, d.a, kSmall);
    d.stream.copy_to_host(pageable(1), d.a, n);
  });
}

void raw_h2d_pageable(benchmark::State& state) {
  for (auto _ : state) {
    g_target.raw->copy_on_device(kSmall);
    g_target.raw->write(pageable(0), bytes_of(state));
  }
  count_bytes(state);
}

void raw_d2h_pageable(benchmark::State& state) {
  g_target.raw->write(host_in(), kLarge);
  for (auto _ : state) {
    g_target.raw->copy_on_device(kSmall);
    g_target.raw->read(pageable(1), bytes_of(state));
  }
  count_bytes(state);
}

void raw_h2d(benchmark::State& state) {
  for (auto _ : state) g_target.raw->write(host_in(), bytes_of(state));
  count_bytes(state);
}

void raw_d2h(benchmark::State& state) {
  g_target.raw->write(host_in(), kLarge);
  for (auto _ : state) g_target.raw->read(host_out(), bytes_of(state));
  count_bytes(state);
}

void raw_d2d(benchmark::State& state) {
  g_target.raw->write(host_in(), kLarge);
  for (auto _ : state) g_target.raw->copy_on_device(bytes_of(state));
  count_bytes(state);
}

void host_memcpy(benchmark::State& state) {
  for (auto _ : state) {
    std::memcpy(host_out(), host_in(), bytes_of(state));
    benchmark::ClobberMemory();
  }
  count_bytes(state);
}

void register_benchmarks() {
  using Fn = void (*)(benchmark::State&);
  std::vector<std::pair<const char*, Fn>> suite = {
      {"hal_h2d", hal_h2d}, {"raw_h2d", raw_h2d}, {"hal_d2h", hal_d2h},   {"raw_d2h", raw_d2h},
      {"hal_d2d", hal_d2d}, {"raw_d2d", raw_d2d}, {"memcpy", host_memcpy}};
  if (g_target.device.info().backend() == "cuda")
    suite.insert(suite.end(), {{"hal_h2d_pageable", hal_h2d_pageable},
                               {"raw_h2d_pageable", raw_h2d_pageable},
                               {"hal_d2h_pageable", hal_d2h_pageable},
                               {"raw_d2h_pageable", raw_d2h_pageable}});
  for (const auto& [name, fn] : suite)
    for (size_t bytes : {kSmall, kLarge})
      register_guarded_arg(name, static_cast<int64_t>(bytes), fn)
          ->Repetitions(5)
          ->ReportAggregatesOnly(true)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
}

std::vector<Comparison> comparisons() {
  // Bandwidth >= 0.95x of the driver's is a time ratio of at most 1/0.95.
  const std::string bandwidth_goal = "ratio <= 1.053 (bandwidth >= 0.95x)";
  const bool cuda = g_target.device.info().backend() == "cuda";
  const std::string small = "/" + std::to_string(kSmall), large = "/" + std::to_string(kLarge);
  std::vector<Comparison> out = {
      {"copy_h2d_4k", "hal_h2d" + small, "raw_h2d" + small, ""},
      {"copy_d2h_4k", "hal_d2h" + small, "raw_d2h" + small, ""},
      {"copy_d2d_4k", "hal_d2d" + small, "raw_d2d" + small, ""},
      {"copy_h2d_64m", "hal_h2d" + large, "raw_h2d" + large, cuda ? bandwidth_goal : ""},
      {"copy_d2h_64m", "hal_d2h" + large, "raw_d2h" + large, cuda ? bandwidth_goal : ""},
      {"copy_d2d_64m", "hal_d2d" + large, "raw_d2d" + large, ""},
      {"copy_h2d_64m_vs_memcpy", "hal_h2d" + large, "memcpy" + large, ""},
      {"copy_d2h_64m_vs_memcpy", "hal_d2h" + large, "memcpy" + large, ""},
  };
  if (cuda)
    for (const char* way : {"h2d", "d2h"})
      for (const auto& [size, suffix] : {std::pair{small, "4k"}, std::pair{large, "64m"}})
        out.push_back({std::string("copy_") + way + "_" + suffix + "_pageable",
                       std::string("hal_") + way + "_pageable" + size,
                       std::string("raw_") + way + "_pageable" + size, ""});
  return out;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  const std::string id = take_option(argc, argv, "--device", "opencl:0");
  try {
    g_target = open_target(id, "copy");
    host_in(), host_out();  // made and touched before anything is timed
  } catch (const std::exception& error) {
    std::cerr << "hal bench copy: " << error.what() << "\n";
    return 2;
  }
  register_benchmarks();
  const int status = run_suite(argc, argv, "copy", id, comparisons());
  g_target.raw.reset();
  return status;
}
