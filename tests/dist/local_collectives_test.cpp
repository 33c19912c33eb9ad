// The local engine over the devices of this process (4 sim devices: HAL_SIM_CONFIG=devices=4
// in CTest): every collective in every dtype and op against dist_reference.hpp's reference, at
// sizes 0, 1 and primes, in place and out of place, with the tree and the ring, from one thread
// and from a thread per rank, and over cpu, opencl and sim devices together.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "dist_reference.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using dist::Communicator;
using dist::ReduceOp;
using dist::Work;

const std::vector<int64_t> kCounts = {0, 1, 13, 1031};

std::vector<Device> sim_devices(size_t count) {
  std::vector<Device> found;
  for (const Device& d : devices())
    if (d.info().backend() == "sim" && found.size() < count) found.push_back(d);
  return found;
}

// The ranks of one group: a communicator and a stream each.
struct Group {
  explicit Group(const std::vector<Device>& devices) : comms(Communicator::local(devices)) {
    for (const Device& d : devices) streams.push_back(d.create_stream());
  }
  int size() const { return static_cast<int>(comms.size()); }
  std::vector<Communicator> comms;
  std::vector<Stream> streams;
};

void wait_all(std::vector<Work>& works) {
  for (Work& w : works) w.wait();
}

// Sets HAL_DIST_LOCAL_ALGORITHM for one scope.
class Algorithm {
 public:
  explicit Algorithm(const char* name) { setenv("HAL_DIST_LOCAL_ALGORITHM", name, 1); }
  ~Algorithm() { unsetenv("HAL_DIST_LOCAL_ALGORITHM"); }
};

class LocalCollectives : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    devices_ = sim_devices(4);
    if (devices_.size() < 4) GTEST_SKIP() << "needs 4 sim devices (HAL_SIM_CONFIG=devices=4)";
  }
  std::vector<Device> devices_;
};

TEST_P(LocalCollectives, AllReduceInEveryDtypeAndOpMatchesTheReference) {
  const Algorithm algorithm(GetParam());
  Group g(devices_);
  for (DType dtype : all_dtypes())
    for (ReduceOp op : all_ops()) {
      if (op == ReduceOp::avg && !floating(dtype)) continue;
      for (int64_t count : kCounts)
        for (bool in_place : {true, false}) {
          SCOPED_TRACE(std::string(to_string(dtype)) + " " + std::string(to_string(op)) +
                       " n=" + std::to_string(count) + (in_place ? " in place" : " out of place"));
          std::vector<Tensor> inputs, outputs;
          std::vector<Work> works;
          for (int r = 0; r < g.size(); ++r) {
            inputs.push_back(tensor_of(values(r, count, dtype), dtype, g.streams[r]));
            outputs.push_back(in_place ? inputs.back() : empty({count}, dtype, devices_[r]));
          }
          for (int r = 0; r < g.size(); ++r)
            works.push_back(g.comms[r].all_reduce(inputs[r], outputs[r], op, g.streams[r]));
          wait_all(works);
          const std::vector<double> expected = reduced(op, dtype, g.size(), count);
          for (int r = 0; r < g.size(); ++r)
            ASSERT_TRUE(same_values(read(outputs[r], g.streams[r]), expected, dtype))
                << "rank " << r;
          if (!in_place) {  // the input is left as it was
            ASSERT_TRUE(same_values(read(inputs[1], g.streams[1]), values(1, count, dtype), dtype));
          }
        }
    }
}

TEST_P(LocalCollectives, ALargeAllReduceMatches) {
  const Algorithm algorithm(GetParam());
  Group g(devices_);
  const int64_t count = 100003;  // prime, 400 kB of f32: the ring by the model
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::avg}) {
    std::vector<Tensor> tensors;
    std::vector<Work> works;
    for (int r = 0; r < g.size(); ++r)
      tensors.push_back(tensor_of(values(r, count, DType::f32), DType::f32, g.streams[r]));
    for (int r = 0; r < g.size(); ++r)
      works.push_back(g.comms[r].all_reduce(tensors[r], op, g.streams[r]));
    wait_all(works);
    const std::vector<double> expected = reduced(op, DType::f32, g.size(), count);
    for (int r = 0; r < g.size(); ++r)
      ASSERT_TRUE(same_values(read(tensors[r], g.streams[r]), expected, DType::f32));
  }
}

TEST_P(LocalCollectives, ReduceAndBroadcastFromEveryRoot) {
  const Algorithm algorithm(GetParam());
  Group g(devices_);
  for (DType dtype : {DType::f32, DType::i8, DType::bf16, DType::boolean})
    for (int root = 0; root < g.size(); ++root)
      for (int64_t count : kCounts) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " root " + std::to_string(root) +
                     " n=" + std::to_string(count));
        std::vector<Tensor> tensors, reduced_out;
        std::vector<Work> works;
        for (int r = 0; r < g.size(); ++r) {
          tensors.push_back(tensor_of(values(r, count, dtype), dtype, g.streams[r]));
          reduced_out.push_back(r == root ? empty({count}, dtype, devices_[r]) : Tensor());
        }
        for (int r = 0; r < g.size(); ++r)
          works.push_back(
              g.comms[r].reduce(tensors[r], reduced_out[r], ReduceOp::max, root, g.streams[r]));
        wait_all(works);
        ASSERT_TRUE(same_values(read(reduced_out[root], g.streams[root]),
                                reduced(ReduceOp::max, dtype, g.size(), count), dtype));
        works.clear();
        for (int r = 0; r < g.size(); ++r)
          works.push_back(g.comms[r].broadcast(tensors[r], root, g.streams[r]));
        wait_all(works);
        for (int r = 0; r < g.size(); ++r)
          ASSERT_TRUE(
              same_values(read(tensors[r], g.streams[r]), values(root, count, dtype), dtype))
              << "rank " << r;
      }
}

TEST_P(LocalCollectives, ReduceInPlaceAtTheRoot) {
  const Algorithm algorithm(GetParam());
  Group g(devices_);
  std::vector<Tensor> tensors;
  std::vector<Work> works;
  for (int r = 0; r < g.size(); ++r)
    tensors.push_back(tensor_of(values(r, 31, DType::i64), DType::i64, g.streams[r]));
  for (int r = 0; r < g.size(); ++r)
    works.push_back(g.comms[r].reduce(tensors[r], r == 2 ? tensors[r] : Tensor(), ReduceOp::sum, 2,
                                      g.streams[r]));
  wait_all(works);
  EXPECT_TRUE(same_values(read(tensors[2], g.streams[2]),
                          reduced(ReduceOp::sum, DType::i64, g.size(), 31), DType::i64));
  EXPECT_TRUE(same_values(read(tensors[0], g.streams[0]), values(0, 31, DType::i64), DType::i64));
}

// HAL_DIST_DEBUG=detail compares shapes too, but not reduce's output: the root's alone, which
// the other ranks may leave undefined (it refused every such reduce).
TEST_P(LocalCollectives, DetailAcceptsAReduceWhoseOutputIsTheRootsAlone) {
  const Algorithm algorithm(GetParam());
  const DebugLevel detail("detail");
  Group g(devices_);
  const int64_t count = 31;
  for (int root = 0; root < g.size(); ++root)
    for (bool in_place : {true, false}) {
      SCOPED_TRACE("root " + std::to_string(root) + (in_place ? " in place" : " out of place"));
      std::vector<Tensor> inputs, outputs;
      std::vector<Work> works;
      for (int r = 0; r < g.size(); ++r) {
        inputs.push_back(tensor_of(values(r, count, DType::f32), DType::f32, g.streams[r]));
        outputs.push_back(r != root  ? Tensor()
                          : in_place ? inputs.back()
                                     : empty({count}, DType::f32, devices_[r]));
      }
      for (int r = 0; r < g.size(); ++r)
        works.push_back(
            g.comms[r].reduce(inputs[r], outputs[r], ReduceOp::sum, root, g.streams[r]));
      wait_all(works);
      ASSERT_TRUE(same_values(read(outputs[root], g.streams[root]),
                              reduced(ReduceOp::sum, DType::f32, g.size(), count), DType::f32));
    }
}

TEST_P(LocalCollectives, AllGatherReduceScatterAndAllToAll) {
  const Algorithm algorithm(GetParam());
  Group g(devices_);
  const int p = g.size();
  for (DType dtype : all_dtypes())
    for (int64_t count : kCounts) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " n=" + std::to_string(count));
      // all_gather: rank r's `count` elements land at r * count of every output.
      std::vector<Tensor> in, out;
      std::vector<Work> works;
      for (int r = 0; r < p; ++r) {
        in.push_back(tensor_of(values(r, count, dtype), dtype, g.streams[r]));
        out.push_back(empty({p, count}, dtype, devices_[r]));
      }
      for (int r = 0; r < p; ++r)
        works.push_back(g.comms[r].all_gather(in[r], out[r], g.streams[r]));
      wait_all(works);
      std::vector<double> gathered;
      for (int r = 0; r < p; ++r)
        for (double v : values(r, count, dtype)) gathered.push_back(v);
      for (int r = 0; r < p; ++r)
        ASSERT_TRUE(same_values(read(out[r], g.streams[r]), gathered, dtype));

      // reduce_scatter: p chunks of `count`; rank r gets the reduction of chunk r.
      const ReduceOp op = floating(dtype) ? ReduceOp::avg : ReduceOp::sum;
      std::vector<Tensor> whole, part;
      works.clear();
      for (int r = 0; r < p; ++r) {
        whole.push_back(tensor_of(values(r, p * count, dtype, 1), dtype, g.streams[r]));
        part.push_back(empty({count}, dtype, devices_[r]));
      }
      for (int r = 0; r < p; ++r)
        works.push_back(g.comms[r].reduce_scatter(whole[r], part[r], op, g.streams[r]));
      wait_all(works);
      const std::vector<double> total = reduced(op, dtype, p, p * count, 1);
      for (int r = 0; r < p; ++r)
        ASSERT_TRUE(same_values(
            read(part[r], g.streams[r]),
            std::vector<double>(total.begin() + r * count, total.begin() + (r + 1) * count), dtype))
            << "rank " << r;

      // all_to_all: chunk j of rank i goes to chunk i of rank j.
      std::vector<Tensor> send, receive;
      works.clear();
      for (int r = 0; r < p; ++r) {
        send.push_back(tensor_of(values(r, p * count, dtype, 2), dtype, g.streams[r]));
        receive.push_back(empty({p * count}, dtype, devices_[r]));
      }
      for (int r = 0; r < p; ++r)
        works.push_back(g.comms[r].all_to_all(send[r], receive[r], g.streams[r]));
      wait_all(works);
      for (int j = 0; j < p; ++j) {
        std::vector<double> expected;
        for (int i = 0; i < p; ++i) {
          const std::vector<double> from = values(i, p * count, dtype, 2);
          expected.insert(expected.end(), from.begin() + j * count, from.begin() + (j + 1) * count);
        }
        ASSERT_TRUE(same_values(read(receive[j], g.streams[j]), expected, dtype)) << "rank " << j;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LocalCollectives, ::testing::Values("auto", "ring", "tree"),
                         [](const auto& param) { return std::string(param.param); });

class LocalGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = sim_devices(4);
    if (devices_.size() < 4) GTEST_SKIP() << "needs 4 sim devices (HAL_SIM_CONFIG=devices=4)";
  }
  std::vector<Device> devices_;
};

TEST_F(LocalGroupTest, SendAndRecvAroundARingMatchByPeerAndTag) {
  Group g(devices_);
  const int p = g.size();
  std::vector<Tensor> out(p), back(p), in(p);
  std::vector<Work> works;
  for (int r = 0; r < p; ++r) {
    in[r] = tensor_of(values(r, 17, DType::i32), DType::i32, g.streams[r]);
    out[r] = empty({17}, DType::i32, devices_[r]);
    back[r] = empty({17}, DType::i32, devices_[r]);
  }
  // Sends first (a send copies its tensor and lets its stream go on), then receives (which
  // hold their streams until the data is there); two tags cross in opposite directions.
  for (int r = 0; r < p; ++r) {
    works.push_back(g.comms[r].send(in[r], (r + 1) % p, g.streams[r], 1));
    works.push_back(g.comms[r].send(in[r], (r + p - 1) % p, g.streams[r], 2));
  }
  for (int r = 0; r < p; ++r) {
    works.push_back(g.comms[r].recv(out[r], (r + p - 1) % p, g.streams[r], 1));
    works.push_back(g.comms[r].recv(back[r], (r + 1) % p, g.streams[r], 2));
  }
  wait_all(works);
  for (int r = 0; r < p; ++r) {
    EXPECT_TRUE(same_values(read(out[r], g.streams[r]), values((r + p - 1) % p, 17, DType::i32),
                            DType::i32));
    EXPECT_TRUE(
        same_values(read(back[r], g.streams[r]), values((r + 1) % p, 17, DType::i32), DType::i32));
  }
}

// Every work of `works` completes within 30 s, or the process ends by name: a group whose
// executor waits for a stream held by a collective queued behind it never ends.
void expect_completed(const std::vector<Work>& works, const std::string& what) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (const Work& work : works)
    while (!work.completed()) {
      if (std::chrono::steady_clock::now() > until) {
        std::fprintf(stderr, "FAILED: %s: the group never ran them\n", what.c_str());
        std::_Exit(1);  // the group's executor is stuck: no teardown could finish
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// Receives are posted in one order and their sends come in another: the recv whose data came
// first waits on its stream behind the other's gate, so the group runs the other first.
TEST_F(LocalGroupTest, SendsThatComeInAnotherOrderThanTheirReceivesAreMatched) {
  Group g({devices_[0], devices_[1], devices_[2]});
  std::vector<Tensor> in, out;
  for (int r = 0; r < 3; ++r) {
    in.push_back(tensor_of(values(r, 13, DType::f32), DType::f32, g.streams[r]));
    out.push_back(empty({13}, DType::f32, devices_[0]));
  }
  Tensor tagged = empty({13}, DType::f32, devices_[0]);
  const Tensor second = tensor_of(values(5, 13, DType::f32), DType::f32, g.streams[1]);
  std::vector<Work> works;
  // Rank 0 takes from rank 1 (tag 1, then tag 2), then from rank 2.
  works.push_back(g.comms[0].recv(out[1], 1, g.streams[0], 1));
  works.push_back(g.comms[0].recv(tagged, 1, g.streams[0], 2));
  works.push_back(g.comms[0].recv(out[2], 2, g.streams[0]));
  // Rank 2 sends first; rank 1 sends tag 2 before tag 1.
  works.push_back(g.comms[2].send(in[2], 0, g.streams[2]));
  works.push_back(g.comms[1].send(second, 0, g.streams[1], 2));
  works.push_back(g.comms[1].send(in[1], 0, g.streams[1], 1));
  expect_completed(works, "receives posted in another order than their sends");
  wait_all(works);
  EXPECT_TRUE(same_values(read(out[1], g.streams[0]), values(1, 13, DType::f32), DType::f32));
  EXPECT_TRUE(same_values(read(tagged, g.streams[0]), values(5, 13, DType::f32), DType::f32));
  EXPECT_TRUE(same_values(read(out[2], g.streams[0]), values(2, 13, DType::f32), DType::f32));
}

TEST_F(LocalGroupTest, CollectivesWaitForEarlierWorkAndLaterWorkWaitsForThem) {
  Group g(devices_);
  std::vector<Tensor> t;
  for (int r = 0; r < g.size(); ++r) t.push_back(zeros({64}, DType::f32, g.streams[r]));
  Gate gate;
  g.streams[3].host_callback(gate.hold());  // rank 3's stream is held: its input not yet there
  t[3] = full({64}, 5.0, DType::f32, g.streams[3]);
  std::vector<Work> works;
  for (int r = 0; r < g.size(); ++r)
    works.push_back(g.comms[r].all_reduce(t[r], ReduceOp::sum, g.streams[r]));
  // Later work on rank 0's stream: doubles the result, only after the collective.
  Tensor doubled = add(t[0], t[0], g.streams[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(works[0].completed());
  gate.open();
  wait_all(works);
  EXPECT_TRUE(same_values(read(doubled, g.streams[0]), std::vector<double>(64, 10.0), DType::f32));
}

TEST_F(LocalGroupTest, ThreadPerRankRunsManyCollectivesInOrder) {
  Group g(devices_);
  constexpr int kRounds = 40;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(g.comms.size());
  for (int r = 0; r < g.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        for (int round = 0; round < kRounds; ++round) {
          const DType dtype = round % 2 ? DType::f32 : DType::i64;
          const int64_t count = 1 + round * 7;
          Tensor t = tensor_of(values(r, count, dtype, round), dtype, g.streams[r]);
          Work w = round % 3 == 0 ? g.comms[r].barrier(g.streams[r])
                                  : g.comms[r].all_reduce(t, ReduceOp::sum, g.streams[r]);
          w.wait();
          if (round % 3 == 0) continue;
          if (!same_values(read(t, g.streams[r]),
                           reduced(ReduceOp::sum, dtype, g.size(), count, round), dtype))
            throw std::runtime_error("round " + std::to_string(round) + ": wrong result");
        }
      } catch (const std::exception& e) {
        failures[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < g.size(); ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

TEST_F(LocalGroupTest, DevicesOfEveryBackendTakePartTogether) {
  std::vector<Device> mixed = {device("cpu:0"), devices_[0], devices_[1]};
  for (const Device& d : hal::devices())
    if (d.info().backend() == "opencl") {
      mixed.push_back(d);
      break;
    }
  Group g(mixed);
  for (DType dtype : {DType::f32, DType::f16, DType::i8})
    for (int64_t count : {int64_t{1}, int64_t{1031}}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " n=" + std::to_string(count));
      std::vector<Tensor> t;
      std::vector<Work> works;
      for (int r = 0; r < g.size(); ++r)
        t.push_back(tensor_of(values(r, count, dtype), dtype, g.streams[r]));
      for (int r = 0; r < g.size(); ++r)
        works.push_back(g.comms[r].all_reduce(t[r], ReduceOp::sum, g.streams[r]));
      wait_all(works);
      for (int r = 0; r < g.size(); ++r)
        ASSERT_TRUE(same_values(read(t[r], g.streams[r]),
                                reduced(ReduceOp::sum, dtype, g.size(), count), dtype))
            << mixed[r].id();
    }
}

TEST_F(LocalGroupTest, TwoRanksOnOneDeviceWorkWithStreamsOfTheirOwn) {
  const Device cpu = device("cpu:0");
  Group g({cpu, cpu});
  std::vector<Tensor> t;
  std::vector<Work> works;
  for (int r = 0; r < 2; ++r)
    t.push_back(tensor_of(values(r, 9, DType::f64), DType::f64, g.streams[r]));
  for (int r = 0; r < 2; ++r)
    works.push_back(g.comms[r].all_reduce(t[r], ReduceOp::prod, g.streams[r]));
  wait_all(works);
  EXPECT_TRUE(
      same_values(read(t[1], g.streams[1]), reduced(ReduceOp::prod, DType::f64, 2, 9), DType::f64));
}

}  // namespace
}  // namespace hal::test
