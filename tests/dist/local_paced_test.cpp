// The ring all-reduce over paced sim devices of different speeds (CTest dist_local_paced:
// HAL_SIM_CONFIG=devices=4,pace=1,bandwidth_gbps=1:4:2:8,...): each lane writes its own chunk
// of the result on a second stream beside the ring's all-gather, and the lanes reach each step
// at different times on the wall clock, so a wait missing between the two streams of a lane,
// or between a lane and its neighbours, shows as wrong elements. Unpaced devices run it too.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "dist_reference.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using dist::Communicator;
using dist::ReduceOp;
using dist::Work;

std::vector<Device> sim_devices(size_t count) {
  std::vector<Device> found;
  for (const Device& d : devices())
    if (d.info().backend() == "sim" && found.size() < count) found.push_back(d);
  return found;
}

class LocalPacedRing : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = sim_devices(4);
    if (devices_.size() < 4) GTEST_SKIP() << "needs 4 sim devices (HAL_SIM_CONFIG=devices=4)";
    setenv("HAL_DIST_LOCAL_ALGORITHM", "ring", 1);
  }
  void TearDown() override { unsetenv("HAL_DIST_LOCAL_ALGORITHM"); }
  std::vector<Device> devices_;
};

TEST_F(LocalPacedRing, AllReduceInPlaceAndOutOfPlaceMatchesTheReference) {
  const std::vector<Communicator> comms = Communicator::local(devices_);
  std::vector<Stream> streams;
  for (const Device& d : devices_) streams.push_back(d.create_stream());
  for (int64_t count : {int64_t{4}, int64_t{1031}, int64_t{65537}})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max})
      for (bool in_place : {true, false}) {
        SCOPED_TRACE(std::string(to_string(op)) + " n=" + std::to_string(count) +
                     (in_place ? " in place" : " out of place"));
        std::vector<Tensor> inputs, outputs;
        std::vector<Work> works;
        for (int r = 0; r < 4; ++r) {
          inputs.push_back(tensor_of(values(r, count, DType::f32), DType::f32, streams[r]));
          outputs.push_back(in_place ? inputs.back() : empty({count}, DType::f32, devices_[r]));
        }
        for (int r = 0; r < 4; ++r)
          works.push_back(comms[r].all_reduce(inputs[r], outputs[r], op, streams[r]));
        // Work on each caller's stream after the collective sees the whole result.
        std::vector<Tensor> doubled;
        for (int r = 0; r < 4; ++r) doubled.push_back(add(outputs[r], outputs[r], streams[r]));
        for (Work& w : works) w.wait();
        std::vector<double> expected = reduced(op, DType::f32, 4, count);
        for (int r = 0; r < 4; ++r) {
          ASSERT_TRUE(same_values(read(outputs[r], streams[r]), expected, DType::f32))
              << "rank " << r;
          std::vector<double> twice = expected;
          for (double& v : twice) v *= 2;
          ASSERT_TRUE(same_values(read(doubled[r], streams[r]), twice, DType::f32))
              << "rank " << r << ", work after the collective";
          if (!in_place) {
            ASSERT_TRUE(
                same_values(read(inputs[r], streams[r]), values(r, count, DType::f32), DType::f32))
                << "rank " << r << "'s input";
          }
        }
      }
}

// Back to back from a thread per rank, each rank's next call enqueued while the ring of the
// previous one still runs: every result must be its round's.
TEST_F(LocalPacedRing, RoundsBackToBackFromAThreadPerRank) {
  const std::vector<Communicator> comms = Communicator::local(devices_);
  constexpr int kRounds = 6;
  constexpr int64_t kCount = 4099;
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      try {
        Stream stream = devices_[r].create_stream();
        std::vector<Tensor> tensors;
        std::vector<Work> works;
        for (int round = 0; round < kRounds; ++round) {
          tensors.push_back(tensor_of(values(r, kCount, DType::f32, round), DType::f32, stream));
          works.push_back(comms[r].all_reduce(tensors.back(), ReduceOp::sum, stream));
        }
        for (Work& w : works) w.wait();
        for (int round = 0; round < kRounds; ++round)
          if (!same_values(read(tensors[round], stream),
                           reduced(ReduceOp::sum, DType::f32, 4, kCount, round), DType::f32))
            throw std::runtime_error("round " + std::to_string(round) + ": wrong result");
      } catch (const std::exception& e) {
        failures[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 4; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

}  // namespace
}  // namespace hal::test
