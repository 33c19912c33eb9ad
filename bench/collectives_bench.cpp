// hal's all-reduce through the MPI engine beside MPI_Allreduce called directly on the same host
// buffer, in the same run (issue #18): `mpirun -np 4 ... hal bench collectives --json`. Rank 0
// reports (the figures, and an nccl-tests-style table: size, count, type, time, algbw, busbw);
// the other ranks take part and print nothing. Each time is the slowest rank's, the median of
// repetitions that alternate hal and MPI; iteration counts are fixed, the same on every rank
// (a collective cannot let each rank choose its own), and `--benchmark_min_time` (hal bench
// --quick) shortens them.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_report.hpp"
#include "hal/dist.hpp"
#include "hal/hal.hpp"

namespace hal::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Size {
  const char* label;  // "8b", "64m": the figure's name
  int64_t bytes;
  int iterations;  // per repetition
};

constexpr Size kSizes[] = {{"8b", 8, 2000},     {"1k", 1 << 10, 1000}, {"64k", 64 << 10, 200},
                           {"1m", 1 << 20, 40}, {"16m", 16 << 20, 5},  {"64m", 64 << 20, 3}};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Seconds per call of `call` over `iterations`, the slowest rank's.
template <class Call>
double timed(int iterations, Call&& call) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) call();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

struct Row {
  Size size;
  double hal_s = 0, mpi_s = 0;
};

void print_table(const std::vector<Row>& rows, int ranks, FILE* out) {
  const double bus = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0;
  std::fprintf(out, "# hal all_reduce vs MPI_Allreduce on the same host buffer, %d ranks\n", ranks);
  std::fprintf(out, "#%11s %12s %6s %6s %11s %7s %7s %11s %7s %7s %8s\n", "size", "count", "type",
               "redop", "hal time", "algbw", "busbw", "mpi time", "algbw", "busbw", "hal/mpi");
  std::fprintf(out, "#%11s %12s %6s %6s %11s %7s %7s %11s %7s %7s %8s\n", "(B)", "(elements)", "",
               "", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)", "");
  for (const Row& r : rows) {
    const double bytes = static_cast<double>(r.size.bytes);
    const double hal_bw = bytes / r.hal_s / 1e9, mpi_bw = bytes / r.mpi_s / 1e9;
    std::fprintf(out, " %11lld %12lld %6s %6s %11.2f %7.2f %7.2f %11.2f %7.2f %7.2f %8.3f\n",
                 static_cast<long long>(r.size.bytes), static_cast<long long>(r.size.bytes / 4),
                 "float", "sum", r.hal_s * 1e6, hal_bw, hal_bw * bus, r.mpi_s * 1e6, mpi_bw,
                 mpi_bw * bus, r.hal_s / r.mpi_s);
  }
  std::fflush(out);
}

std::vector<Figure> measure(const dist::Communicator& world, bool quick, FILE* table) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  const int repetitions = quick ? 3 : 7;
  std::vector<Row> rows;
  for (const Size& size : kSizes) {
    const int64_t count = size.bytes / 4;
    const int iterations = std::max(1, quick ? size.iterations / 4 : size.iterations);
    const Tensor t = ones({count}, DType::f32, stream);
    stream.synchronize();
    float* host = t.storage().data<float>() + t.offset();
    auto hal_call = [&] { world.all_reduce(t, dist::ReduceOp::sum, stream).wait(); };
    auto mpi_call = [&] {
      MPI_Allreduce(MPI_IN_PLACE, host, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    };
    hal_call();  // warm: the communicator, the staging-free path, MPI's own buffers
    mpi_call();
    std::vector<double> hal_times, mpi_times;
    for (int rep = 0; rep < repetitions; ++rep) {
      if (rep % 2 == 0) {  // alternate which goes first, so that neither has the warmer cache
        hal_times.push_back(timed(iterations, hal_call));
        mpi_times.push_back(timed(iterations, mpi_call));
      } else {
        mpi_times.push_back(timed(iterations, mpi_call));
        hal_times.push_back(timed(iterations, hal_call));
      }
    }
    stream.synchronize();
    rows.push_back({size, median(hal_times), median(mpi_times)});
  }
  if (world.rank() == 0) print_table(rows, world.size(), table);

  std::vector<Figure> figures;
  for (const Row& r : rows) {
    const std::string name = std::string("allreduce_f32_") + r.size.label;
    std::string goal;
    if (name == "allreduce_f32_64m") goal = "ratio <= 1.05";
    if (name == "allreduce_f32_8b") goal = "hal <= mpi + 5 us";
    figures.push_back({name, r.hal_s * 1e6, "us", "mpi_allreduce", r.mpi_s * 1e6, r.hal_s / r.mpi_s,
                       "lower", goal});
  }
  const Row& tiny = rows.front();
  const double overhead_us = (tiny.hal_s - tiny.mpi_s) * 1e6;
  figures.push_back({"allreduce_f32_8b_overhead", overhead_us, "us", "goal_us", 5.0,
                     overhead_us / 5.0, "lower", "<= 5 us over MPI_Allreduce"});
  return figures;
}

}  // namespace
}  // namespace hal::bench

int main(int argc, char** argv) {
  using namespace hal::bench;
  bool json = false, quick = false;
  for (int i = 1; i < argc; ++i) {
    json = json || std::strcmp(argv[i], "--json") == 0;
    quick = quick || std::strncmp(argv[i], "--benchmark_min_time", 20) == 0;
  }
  const hal::dist::Communicator world = hal::dist::Communicator::world();  // initialises MPI
  // Every rank measures; rank 0 reports. The table goes beside the JSON, not into it.
  if (world.rank() != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
  FILE* table = json ? stderr : stdout;
  return run_suite(argc, argv, "collectives",
                   "cpu:0, " + std::to_string(world.size()) + " MPI ranks", {},
                   [&] { return measure(world, quick, table); });
}
