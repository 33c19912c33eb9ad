// Ranks that stall, leave or die, run by CTest under mpirun with HAL_DIST_TIMEOUT=1, one case a
// run (each leaves the world communicator unusable): the other ranks fail with Timeout naming
// the absent rank and the collective (or the world's creation) within the timeout, never hang;
// the late rank fails too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "dist/mpi/mpi_comm.hpp"
#include "dist_reference.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using dist::Communicator;
using dist::ReduceOp;
using Clock = std::chrono::steady_clock;

constexpr int kAbsent = 3;

// Before main, which makes the world communicator first.
const Clock::time_point process_start = Clock::now();

struct Setting {
  Communicator world = Communicator::world();
  Stream stream = device("cpu:0").create_stream();
  Tensor t = ones({1031}, DType::f32, stream);  // past the exchange's 64 bytes
};

// The others' side: the all_reduce (#2, after the barrier) fails with Timeout naming rank 3,
// after about the timeout.
void expect_named_timeout(Setting& s) {
  const auto start = Clock::now();
  try {
    s.world.all_reduce(s.t, ReduceOp::sum, s.stream).wait();
    ADD_FAILURE() << "the all_reduce completed without rank " << kAbsent;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Timeout) << e.what();
    EXPECT_EQ(e.op(), "all_reduce");
    for (const char* part :
         {"all_reduce #2 on communicator 'world'", "HAL_DIST_TIMEOUT", "rank 3 did not answer"})
      EXPECT_NE(e.message().find(part), std::string::npos) << part << " not in: " << e.message();
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(waited, 0.5);
  EXPECT_LE(waited, 10.0);  // HAL_DIST_TIMEOUT is 1 s: bounded, never a hang
  // The stream reports the failure; the communicator refuses further calls at once.
  EXPECT_THROW(s.stream.synchronize(), Error);
  expect_error([&] { s.world.barrier(s.stream); }, ErrorCode::InvalidState,
               {"unusable after an earlier failure", "rank 3 did not answer"});
}

TEST(MpiFaults, AStalledRankIsNamedAndFailsWhenItComesBack) {
  Setting s;
  ASSERT_EQ(s.world.size(), 4) << "run with mpirun -np 4";
  s.world.barrier(s.stream).wait();
  if (s.world.rank() != kAbsent) return expect_named_timeout(s);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past the others' timeout
  expect_error([&] { s.world.all_reduce(s.t, ReduceOp::sum, s.stream).wait(); }, ErrorCode::Timeout,
               {"gave up all_reduce #2", "this rank came late"});
}

TEST(MpiFaults, ARankThatLeavesEarlyIsNamed) {
  // Bounds rank 3's MPI_Finalize at exit (none by default: MPI's own wait).
  setenv("HAL_DIST_FINALIZE_TIMEOUT", "1", 1);
  Setting s;
  ASSERT_EQ(s.world.size(), 4) << "run with mpirun -np 4";
  s.world.barrier(s.stream).wait();
  if (s.world.rank() != kAbsent) {
    expect_named_timeout(s);
    // The survivors stay a while, then exit unfinalised. Rank 3 returns at once and waits in
    // MPI_Finalize at exit for them, which Open MPI (under --enable-recovery) may never end once
    // they are gone: HAL_DIST_FINALIZE_TIMEOUT bounds it, and staying past that makes the bound
    // the way rank 3 ends, every run (CTest looks for its line).
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  }
}

// A healthy rank that finishes its own work (a checkpoint) past HAL_DIST_TIMEOUT after the others
// returned from main: they wait for it in MPI_Finalize, as MPI does, and every rank exits 0
// (hal ended them at HAL_DIST_TIMEOUT with EXIT_FAILURE, and plain mpirun the whole job).
TEST(MpiFaults, ARankThatFinishesLateIsWaitedForAtExit) {
  unsetenv("HAL_DIST_FINALIZE_TIMEOUT");
  Setting s;
  s.world.barrier(s.stream).wait();
  const double patience = dist::timeout_seconds();
  if (s.world.rank() == 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(patience + 2.0));
}

TEST(MpiFaults, ARankThatDiesIsNamed) {
  // mpirun --enable-recovery keeps the others running when a process dies (without it
  // Open MPI's runtime kills the whole job, which ends it as surely).
  Setting s;
  ASSERT_EQ(s.world.size(), 4) << "run with mpirun -np 4";
  s.world.barrier(s.stream).wait();
  if (s.world.rank() == kAbsent) ::_exit(0);  // without MPI_Finalize: a death, as mpirun sees it
  expect_named_timeout(s);
  // The survivors return from main: hal leaves MPI unfinalised once a communicator broke down
  // (Open MPI's MPI_Finalize would wait for the dead rank).
}

// Run with HAL_DIST_INJECT_CREATE_STALL=3:2.5 (CTest sets it, with HAL_DIST_TIMEOUT=1): rank 3
// passes MPI_Init with the others, then sleeps 2.5 s before it makes the world communicator. The
// others' Communicator::world(), in main, fails with Timeout after HAL_DIST_TIMEOUT instead of
// waiting in MPI_Comm_dup for ever; so does rank 3's, late; later calls throw the same error.
TEST(MpiFaults, ARankThatDoesNotCreateTheWorldTimesOut) {
  const char* stall = std::getenv("HAL_DIST_INJECT_CREATE_STALL");
  ASSERT_TRUE(stall != nullptr && std::string(stall) == "3:2.5")
      << "run with HAL_DIST_INJECT_CREATE_STALL=3:2.5 and HAL_DIST_TIMEOUT=1";
  ASSERT_EQ(dist::timeout_seconds(), 1.0) << "run with HAL_DIST_TIMEOUT=1";
  const double age = std::chrono::duration<double>(Clock::now() - process_start).count();
  const int rank = dist::launch_info().rank;
  expect_error([] { (void)Communicator::world(); }, ErrorCode::Timeout,
               {"creating communicator 'world' (rank " + std::to_string(rank) + " of 4)",
                "MPI_Comm_idup did not complete within 1.00 s (HAL_DIST_TIMEOUT)"});
  if (rank == kAbsent) {
    EXPECT_GE(age, 3.5);  // its stall, then its own HAL_DIST_TIMEOUT: the others had given up
    EXPECT_LE(age, 13.0);
    return;
  }
  EXPECT_GE(age, 1.0);
  EXPECT_LE(age, 10.0);  // bounded, never a hang
  // Alive (out of MPI) until rank 3 has waited too: its MPI_Test might fail, not time out, once
  // its peers are gone.
  std::this_thread::sleep_for(std::chrono::seconds(4));
}

// Rank 3 comes to `call` 2.5 s late, after the test's barrier: the others fail in its first
// collective (`collective`, "barrier #2") with Timeout naming rank 3 within the bound, and rank
// 3 hears that they gave up.
void expect_the_late_rank_named(const std::function<void()>& call, const std::string& collective) {
  Setting s;
  ASSERT_EQ(s.world.size(), 4) << "run with mpirun -np 4";
  s.world.barrier(s.stream).wait();
  if (s.world.rank() != kAbsent) {
    const auto start = Clock::now();
    expect_error(
        call, ErrorCode::Timeout,
        {collective + " on communicator 'world'", "HAL_DIST_TIMEOUT", "rank 3 did not answer"});
    EXPECT_LE(std::chrono::duration<double>(Clock::now() - start).count(), 10.0);
    // Alive until rank 3 has come and heard that they gave up (a peer's exit could lose it).
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past the others' timeout
  expect_error(call, ErrorCode::Timeout, {"gave up " + collective, "this rank came late"});
}

// NCCL's bootstrap (broadcast_setup, rank 0's unique id to every rank) is the communicator's
// own broadcast, bounded: the blocking MPI_Bcast it was waited for a late rank without end.
TEST(MpiFaults, ARankLateToANcclBootstrapIsNamed) {
  expect_the_late_rank_named(
      [] {
        std::array<unsigned char, 128> id{};
        dist::detail::world_comm()->broadcast_setup(id.data(), static_cast<int>(id.size()));
      },
      "broadcast #2");
}

// MPI_Comm_split (DeviceMesh::create) has no nonblocking form, so the split of the world meets
// first in a bounded barrier.
TEST(MpiFaults, ARankLateToAMeshIsNamed) {
  expect_the_late_rank_named(
      [] {
        (void)dist::DeviceMesh::create({4}, {"dp"}, {.devices = {device("cpu:0")}, .backend = ""});
      },
      "barrier #2");
}

// Calls on `sim` (a direct allocation and its free each) until it is lost: HAL_SIM_CONFIG's
// lose_device_at, set by CTest for rank 3 alone. Whether it was.
bool lose(const Device& sim) {
  for (int i = 0; i < 100000; ++i) try {
      (void)sim.allocate(1, MemoryKind::device, AllocationMode::direct);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::DeviceLost) return true;
    }
  return false;
}

// Each rank's sim:0 and a tensor on it, past the exchange's 64 bytes (so staged).
struct OnSim {
  Communicator world = Communicator::world();
  Device sim = device("sim:0");
  Stream stream = sim.create_stream();
  Tensor t = ones({1031}, DType::f32, stream);
  OnSim() { stream.synchronize(); }
  // After a rank's failure: the next collective, on host memory, finds every rank there.
  void expect_the_group_goes_on() {
    Stream host = device("cpu:0").create_stream();
    Tensor counted = ones({1031}, DType::f32, host);
    world.all_reduce(counted, ReduceOp::sum, host).wait();
    const std::vector<float> sums = counted.to_vector<float>(host);
    EXPECT_EQ(sums.front(), 4.0f);
    EXPECT_EQ(sums.back(), 4.0f);
  }
};

// Rank 3's sim device is lost (HAL_SIM_CONFIG=...,lose_device_at=N for rank 3 alone, set by
// CTest) after it made its tensor: its all_reduce cannot stage the tensor and fails at once. The
// others hear that it could not take part (not a timeout), and the next collective, on host
// memory, finds every rank at the same number.
TEST(MpiFaults, ARankThatCannotStageItsTensorIsNamedAndTheGroupGoesOn) {
  OnSim s;
  ASSERT_EQ(s.world.size(), 4) << "run with mpirun -np 4";
  if (s.world.rank() == kAbsent) {
    ASSERT_TRUE(lose(s.sim)) << "run rank 3 with HAL_SIM_CONFIG=devices=1,lose_device_at=N";
    expect_error([&] { s.world.all_reduce(s.t, ReduceOp::sum, s.stream); }, ErrorCode::DeviceLost,
                 {"was lost"});
  } else {
    expect_error(
        [&] { s.world.all_reduce(s.t, ReduceOp::sum, s.stream).wait(); }, ErrorCode::InvalidState,
        {"all_reduce #1 on communicator 'world'", "rank 3 could not take part", "was lost"});
  }
  s.expect_the_group_goes_on();
}

// Rank 3's sim device is lost (HAL_SIM_CONFIG=...,lose_device_at=N for rank 3 alone) while its
// all_reduce's gate waits in the stream's queue, behind a host callback held shut. A plugin of
// ABI 1.3 drops the callbacks that begin after a loss; this gate runs all the same (hal's
// host_callback_even_if_lost), finds the loss staging the tensor and tells the others: they fail
// at once naming rank 3 (not by HAL_DIST_TIMEOUT), and rank 3's own work fails with the loss
// (dropped, its gate left it waiting for ever).
TEST(MpiFaults, ARankLostWhileItsGateWaitsIsNamedAtOnce) {
  OnSim s;
  ASSERT_EQ(s.world.size(), 4) << "run with mpirun -np 4";
  const Clock::time_point start = Clock::now();
  if (s.world.rank() == kAbsent) {
    Gate gate;
    s.stream.host_callback(gate.hold());
    dist::Work work = s.world.all_reduce(s.t, ReduceOp::sum, s.stream);  // its gate waits behind
    const bool lost = lose(s.sim);
    gate.open();
    ASSERT_TRUE(lost) << "run rank 3 with HAL_SIM_CONFIG=devices=1,lose_device_at=N";
    expect_error([&] { work.wait(); }, ErrorCode::DeviceLost, {"was lost"});
  } else {
    expect_error(
        [&] { s.world.all_reduce(s.t, ReduceOp::sum, s.stream).wait(); }, ErrorCode::InvalidState,
        {"all_reduce #1 on communicator 'world'", "rank 3 could not take part", "was lost"});
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10))
      << "the loss was found by HAL_DIST_TIMEOUT (20 s), not by rank 3's gate";
  s.expect_the_group_goes_on();
}

// Run with HAL_DIST_INJECT_STALL=3:3: rank 3 stalls after the exchange, before MPI's blocking
// collective, which the others are already in and which MPI cannot cancel. Their watchdog names
// rank 3 and ends the job with MPI_Abort (CTest looks for that in the output): no hang.
TEST(MpiFaults, ABlockingCollectiveThatOverrunsEndsTheJob) {
  Setting s;
  ASSERT_EQ(s.world.size(), 4) << "run with mpirun -np 4";
  s.world.all_reduce(s.t, ReduceOp::sum, s.stream).wait();
  ADD_FAILURE() << "the all_reduce completed: rank 3 was to stall past HAL_DIST_TIMEOUT";
}

}  // namespace
}  // namespace hal::test
