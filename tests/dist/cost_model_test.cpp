// The alpha-beta model of all-reduce and the choice it makes, the settings the collectives
// read from the environment, and the launcher's environment.
#include <gtest/gtest.h>

#include <cstdlib>

#include "hal/dist.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using dist::AllReduceAlgorithm;
using dist::LinkModel;

// Sets an environment variable for one scope.
class Env {
 public:
  Env(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~Env() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(CostModel, RingAndTreeFollowTheirFormulas) {
  const LinkModel link{.alpha_s = 5e-6, .beta_s_per_byte = 1e-11, .gamma_s_per_byte = 3e-11};
  const double n = 1 << 20;
  // Ring: 2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
  EXPECT_DOUBLE_EQ(dist::predict_all_reduce(AllReduceAlgorithm::ring, 4, n, link),
                   6 * 5e-6 + 1.5 * n * 1e-11 + 0.75 * n * 3e-11);
  // Tree: 2 ceil(log2 p) (alpha + n beta) + ceil(log2 p) n gamma; 5 ranks take 3 levels.
  EXPECT_DOUBLE_EQ(dist::predict_all_reduce(AllReduceAlgorithm::tree, 5, n, link),
                   6 * (5e-6 + n * 1e-11) + 3 * n * 3e-11);
  EXPECT_EQ(dist::predict_all_reduce(AllReduceAlgorithm::tree, 1, n, link), 0.0);
  expect_error([&] { dist::predict_all_reduce(AllReduceAlgorithm::ring, 0, n, link); },
               ErrorCode::InvalidArgument, {"0 ranks"});
}

TEST(CostModel, SmallMessagesTakeTheTreeAndLargeOnesTheRing) {
  const LinkModel link{.alpha_s = 5e-6, .beta_s_per_byte = 1e-11, .gamma_s_per_byte = 3e-11};
  for (int64_t p : {4, 1024, 16384}) {
    EXPECT_EQ(dist::choose_all_reduce(p, 8, link), AllReduceAlgorithm::tree) << p;
    EXPECT_EQ(dist::choose_all_reduce(p, 1e10, link), AllReduceAlgorithm::ring) << p;
  }
  // The crossover grows with the ranks: 2(p-1) alphas against 2 log2 p.
  auto crossover = [&](int64_t p) {
    double bytes = 1;
    while (dist::choose_all_reduce(p, bytes, link) == AllReduceAlgorithm::tree) bytes *= 1.1;
    return bytes;
  };
  EXPECT_LT(crossover(4), crossover(1024));
  EXPECT_LT(crossover(1024), crossover(16384));
}

TEST(CostModel, ALocalGroupsLinkComesFromItsDevicesPeaks) {
  std::vector<Device> sims;
  for (const Device& d : devices())
    if (d.info().backend() == "sim") sims.push_back(d);
  if (sims.empty()) GTEST_SKIP() << "needs sim devices";
  const LinkModel link = dist::link_model(sims);
  const PeakFigures& peak = sims[0].info().peak;
  EXPECT_DOUBLE_EQ(link.alpha_s, 1.5 * peak.launch_latency_us * 1e-6);
  EXPECT_DOUBLE_EQ(link.beta_s_per_byte, 1.0 / (peak.bandwidth_gbps * 1e9));
  EXPECT_DOUBLE_EQ(link.gamma_s_per_byte, 3.0 / (peak.bandwidth_gbps * 1e9));
}

TEST(DistSettings, TimeoutDefaultsToAMinuteAndRefusesNonsense) {
  unsetenv("HAL_DIST_TIMEOUT");
  EXPECT_EQ(dist::timeout_seconds(), 60.0);
  {
    const Env e("HAL_DIST_TIMEOUT", "2.5");
    EXPECT_EQ(dist::timeout_seconds(), 2.5);
  }
  for (const char* bad : {"-1", "0", "inf", "1s", "nan"}) {
    const Env e("HAL_DIST_TIMEOUT", bad);
    expect_error([] { dist::timeout_seconds(); }, ErrorCode::InvalidArgument,
                 {"HAL_DIST_TIMEOUT", bad});
  }
}

TEST(DistSettings, LaunchInfoReadsTheLaunchersVariables) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(name)) GTEST_SKIP() << "run under a launcher (" << name << ")";
  EXPECT_EQ(dist::launch_info().source, "none");
  EXPECT_EQ(dist::launch_info().size, 1);
  {
    const Env rank("OMPI_COMM_WORLD_RANK", "3"), size("OMPI_COMM_WORLD_SIZE", "4"),
        local("OMPI_COMM_WORLD_LOCAL_RANK", "1"), local_size("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
    const dist::LaunchInfo info = dist::launch_info();
    EXPECT_EQ(info.rank, 3);
    EXPECT_EQ(info.size, 4);
    EXPECT_EQ(info.local_rank, 1);
    EXPECT_EQ(info.local_size, 2);
    EXPECT_EQ(info.source, "OMPI_COMM_WORLD_*");
  }
  {
    const Env rank("PMI_RANK", "5"), size("PMI_SIZE", "2");
    expect_error([] { dist::launch_info(); }, ErrorCode::InvalidArgument, {"rank 5 of 2"});
  }
  {
    // srun --mpi=pmix: the rank from PMIx, the size and local rank from Slurm's variables.
    const Env rank("PMIX_RANK", "2"), tasks("SLURM_NTASKS", "4"), local("SLURM_LOCALID", "1");
    const dist::LaunchInfo info = dist::launch_info();
    EXPECT_EQ(info.source, "PMIX_*");
    EXPECT_EQ(info.size, 4);
    EXPECT_EQ(info.local_rank, 1);
    EXPECT_EQ(info.local_size, 0);  // unstated
    EXPECT_TRUE(info.several());
  }
  {
    // The rank alone: the size is unknown, never rank + 1 (rank 0 took itself for a job of one).
    const Env rank("PMIX_RANK", "0");
    const dist::LaunchInfo info = dist::launch_info();
    EXPECT_EQ(info.size, 0);
    EXPECT_TRUE(info.several());
  }
  {
    // A second task of a node under Slurm, whose local size no variable states.
    const Env rank("SLURM_PROCID", "1"), tasks("SLURM_NTASKS", "2"), local("SLURM_LOCALID", "1");
    const dist::LaunchInfo info = dist::launch_info();
    EXPECT_EQ(info.local_rank, 1);
    EXPECT_EQ(info.local_size, 0);
  }
  {
    const Env rank("SLURM_PROCID", "x");
    expect_error([] { dist::launch_info(); }, ErrorCode::InvalidArgument, {"SLURM_PROCID", "'x'"});
  }
}

TEST(DistSettings, EnumsHaveTheirNames) {
  EXPECT_EQ(dist::to_string(dist::ReduceOp::avg), "avg");
  EXPECT_EQ(dist::to_string(dist::Collective::reduce_scatter), "reduce_scatter");
  EXPECT_EQ(dist::to_string(dist::Engine::nccl), "nccl");
  EXPECT_EQ(dist::to_string(AllReduceAlgorithm::tree), "tree");
}

}  // namespace
}  // namespace hal::test
