// The MPI engine, run by CTest as `mpirun -np 4 ... dist_mpi_test`: every collective in every
// dtype and op against dist_reference.hpp's reference at sizes 0, 1 and primes (the small ones
// travel in the exchange of signatures, the larger ones in MPI's own collective), in place and
// out of place, with tensors on cpu:0 (host memory, read by MPI directly), opencl:0 and sim:0
// (device memory, staged through host memory); point to point; ranks that disagree.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "dist/mpi/mpi_comm.hpp"
#include "dist_reference.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using dist::Communicator;
using dist::ReduceOp;
using dist::Work;

const std::vector<int64_t> kCounts = {0, 1, 13, 1031};

Device first_of(const std::string& backend) {
  for (const Device& d : devices())
    if (d.info().backend() == backend) return d;
  return {};
}

class MpiCollectives : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    device_ = first_of(GetParam());
    if (!device_) GTEST_SKIP() << "no " << GetParam() << " device here";
    world_ = Communicator::world();
    stream_ = device_.create_stream();
    // Every dtype and op on the CPU; a representative set on the devices staged through host.
    const bool cpu = GetParam() == "cpu";
    dtypes_ = cpu ? host_dtypes()
                  : std::vector<DType>{DType::f32, DType::f16, DType::i64, DType::boolean};
    ops_ = cpu ? all_ops() : std::vector<ReduceOp>{ReduceOp::sum, ReduceOp::max, ReduceOp::avg};
  }
  int rank() const { return world_.rank(); }
  int size() const { return world_.size(); }
  Tensor input(int64_t count, DType dtype, int salt = 0) {
    return tensor_of(values(rank(), count, dtype, salt), dtype, stream_);
  }

  Device device_;
  Communicator world_;
  Stream stream_;
  std::vector<DType> dtypes_;
  std::vector<ReduceOp> ops_;
};

TEST_P(MpiCollectives, AllReduceMatchesTheReference) {
  EXPECT_EQ(world_.engine(), dist::Engine::mpi);
  EXPECT_EQ(world_.name(), "world");
  for (DType dtype : dtypes_)
    for (ReduceOp op : ops_) {
      if (op == ReduceOp::avg && !floating(dtype)) continue;
      for (int64_t count : kCounts)
        for (bool in_place : {true, false}) {
          SCOPED_TRACE(std::string(to_string(dtype)) + " " + std::string(to_string(op)) +
                       " n=" + std::to_string(count) + (in_place ? " in place" : " out of place"));
          const Tensor in = input(count, dtype);
          const Tensor out = in_place ? in : empty({count}, dtype, device_);
          world_.all_reduce(in, out, op, stream_).wait();
          ASSERT_TRUE(same_values(read(out, stream_), reduced(op, dtype, size(), count), dtype));
          if (!in_place) {
            ASSERT_TRUE(same_values(read(in, stream_), values(rank(), count, dtype), dtype));
          }
        }
    }
}

TEST_P(MpiCollectives, ReduceAndBroadcastFromEveryRoot) {
  for (DType dtype : dtypes_)
    for (int root = 0; root < size(); ++root)
      for (int64_t count : kCounts) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " root " + std::to_string(root) +
                     " n=" + std::to_string(count));
        const ReduceOp op = floating(dtype) ? ReduceOp::avg : ReduceOp::min;
        const Tensor in = input(count, dtype);
        const Tensor out = rank() == root ? empty({count}, dtype, device_) : Tensor();
        world_.reduce(in, out, op, root, stream_).wait();
        if (rank() == root) {
          ASSERT_TRUE(same_values(read(out, stream_), reduced(op, dtype, size(), count), dtype));
        }
        const Tensor t = input(count, dtype, 3);
        world_.broadcast(t, root, stream_).wait();
        ASSERT_TRUE(same_values(read(t, stream_), values(root, count, dtype, 3), dtype));
      }
}

TEST_P(MpiCollectives, AllGatherReduceScatterAndAllToAll) {
  const int p = size();
  for (DType dtype : dtypes_)
    for (int64_t count : kCounts) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " n=" + std::to_string(count));
      const Tensor gathered = empty({p, count}, dtype, device_);
      world_.all_gather(input(count, dtype), gathered, stream_).wait();
      std::vector<double> expected;
      for (int r = 0; r < p; ++r)
        for (double v : values(r, count, dtype)) expected.push_back(v);
      ASSERT_TRUE(same_values(read(gathered, stream_), expected, dtype));

      const ReduceOp op = floating(dtype) ? ReduceOp::sum : ReduceOp::max;
      const Tensor part = empty({count}, dtype, device_);
      world_.reduce_scatter(input(p * count, dtype, 1), part, op, stream_).wait();
      const std::vector<double> total = reduced(op, dtype, p, p * count, 1);
      ASSERT_TRUE(same_values(
          read(part, stream_),
          std::vector<double>(total.begin() + rank() * count, total.begin() + (rank() + 1) * count),
          dtype));

      const Tensor received = empty({p * count}, dtype, device_);
      world_.all_to_all(input(p * count, dtype, 2), received, stream_).wait();
      expected.clear();
      for (int i = 0; i < p; ++i) {
        const std::vector<double> from = values(i, p * count, dtype, 2);
        expected.insert(expected.end(), from.begin() + rank() * count,
                        from.begin() + (rank() + 1) * count);
      }
      ASSERT_TRUE(same_values(read(received, stream_), expected, dtype));
    }
}

TEST_P(MpiCollectives, SendAndRecvAroundTheRing) {
  const int p = size();
  for (int64_t count : {int64_t{1}, int64_t{1031}}) {
    const Tensor mine = input(count, DType::f32);
    const Tensor from_left = empty({count}, DType::f32, device_);
    // The send first: it copies its tensor and lets the stream go on; the recv holds it.
    Work s = world_.send(mine, (rank() + 1) % p, stream_, 3);
    Work r = world_.recv(from_left, (rank() + p - 1) % p, stream_, 3);
    s.wait();
    r.wait();
    EXPECT_TRUE(same_values(read(from_left, stream_),
                            values((rank() + p - 1) % p, count, DType::f32), DType::f32));
  }
}

TEST_P(MpiCollectives, LaterWorkOnTheStreamWaitsForTheCollective) {
  Gate gate;
  stream_.host_callback(gate.hold());
  const Tensor t = full({64}, static_cast<double>(rank() + 1), DType::f32, stream_);
  Work w = world_.all_reduce(t, ReduceOp::sum, stream_);
  const Tensor doubled = tensor_of(std::vector<double>(64, 0.0), DType::f32, stream_);
  stream_.copy(doubled.storage(), t.storage(), 64 * sizeof(float));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(w.completed());
  gate.open();
  w.wait();
  const double total = size() * (size() + 1) / 2.0;
  EXPECT_TRUE(same_values(read(doubled, stream_), std::vector<double>(64, total), DType::f32));
}

INSTANTIATE_TEST_SUITE_P(Devices, MpiCollectives, ::testing::Values("cpu", "opencl", "sim"),
                         [](const auto& param) { return param.param; });

TEST(MpiWorld, ALargeAllReduceOfHostMemory) {
  Communicator world = Communicator::world();
  Stream s = device("cpu:0").create_stream();
  const int64_t count = (1 << 20) + 7;
  const Tensor t = tensor_of(values(world.rank(), count, DType::f32), DType::f32, s);
  world.all_reduce(t, ReduceOp::sum, s).wait();
  EXPECT_TRUE(
      same_values(read(t, s), reduced(ReduceOp::sum, DType::f32, world.size(), count), DType::f32));
}

// NCCL's bootstrap: rank 0's bytes (its unique id) to every rank, through the communicator's
// own broadcast (bounded: MpiFaults.ARankLateToANcclBootstrapIsNamed); the world goes on after.
TEST(MpiWorld, TheSetUpBroadcastGivesEveryRankRankZerosBytes) {
  const std::shared_ptr<dist::detail::MpiComm> world = dist::detail::world_comm();
  std::array<unsigned char, 128> id{};  // ncclUniqueId's size
  if (world->rank() == 0)
    for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<unsigned char>(i * 7 + 1);
  world->broadcast_setup(id.data(), static_cast<int>(id.size()));
  for (size_t i = 0; i < id.size(); ++i)
    ASSERT_EQ(id[i], static_cast<unsigned char>(i * 7 + 1))
        << "byte " << i << " on rank " << world->rank();
  Stream stream = device("cpu:0").create_stream();
  Tensor one = ones({3}, DType::f32, stream);
  Communicator::world().all_reduce(one, ReduceOp::sum, stream).wait();
  EXPECT_EQ(one.to_vector<float>(stream), std::vector<float>(3, static_cast<float>(world->size())));
}

// A rank that cannot take part in NCCL's bootstrap (no NCCL on its node, no unique id) says so
// in the broadcast: the others fail at once naming it and its reason (not a Timeout), it gets
// its own error, and the world goes on. A reason of NCCL's length reaches them whole (55 bytes
// of it did once).
TEST(MpiWorld, ARankThatCannotJoinTheSetUpBroadcastIsNamedAtOnce) {
  const std::shared_ptr<dist::detail::MpiComm> world = dist::detail::world_comm();
  std::array<unsigned char, 128> id{};
  const std::string reason =
      "NCCL (libnccl.so.2) cannot be opened, so CUDA devices have no NCCL collectives";
  std::exception_ptr unready;
  if (world->rank() == 1)
    unready = std::make_exception_ptr(Error(ErrorCode::BackendUnavailable, reason));
  if (world->rank() == 1) {
    expect_error([&] { world->broadcast_setup(id.data(), 128, unready); },
                 ErrorCode::BackendUnavailable, {reason});
  } else {
    expect_error([&] { world->broadcast_setup(id.data(), 128); }, ErrorCode::InvalidState,
                 {"broadcast #", "on communicator 'world'", "rank 1 could not take part",
                  "BackendUnavailable: " + reason});
  }
  // One longer than a record holds is cut, and says so; rank 1's own error holds it whole.
  const std::string longer = reason + std::string(100, '!');
  if (world->rank() == 1) {
    unready = std::make_exception_ptr(Error(ErrorCode::BackendUnavailable, longer));
    expect_error([&] { world->broadcast_setup(id.data(), 128, unready); },
                 ErrorCode::BackendUnavailable, {longer});
  } else {
    expect_error([&] { world->broadcast_setup(id.data(), 128); }, ErrorCode::InvalidState,
                 {"rank 1 could not take part: BackendUnavailable: " + reason + "!!!", "!..."});
  }
  Stream stream = device("cpu:0").create_stream();
  Tensor one = ones({3}, DType::f32, stream);
  Communicator::world().all_reduce(one, ReduceOp::sum, stream).wait();
  EXPECT_EQ(one.to_vector<float>(stream), std::vector<float>(3, static_cast<float>(world->size())));
}

TEST(MpiWorld, RanksThatDisagreeFailTogetherAndTheCommunicatorGoesOn) {
  Communicator world = Communicator::world();
  Stream s = device("cpu:0").create_stream();
  // Rank 1 passes 7 elements where the others pass 8 (small: in the exchange), then 1000
  // where the others pass 1001 (large: caught before MPI's collective is posted).
  for (int64_t n : {8, 1001}) {
    const Tensor t = zeros({world.rank() == 1 ? n - 1 : n}, DType::f32, s);
    Work w = world.all_reduce(t, ReduceOp::sum, s);
    expect_error([&] { w.wait(); }, ErrorCode::InvalidArgument,
                 {"all_reduce", "the ranks disagree",
                  "rank 1 called all_reduce(f32[" + std::to_string(n - 1)});
    EXPECT_THROW(s.synchronize(), Error);
  }
  const Tensor dtype_differs = zeros({4}, world.rank() == 2 ? DType::f64 : DType::f32, s);
  expect_error([&] { world.broadcast(dtype_differs, 0, s).wait(); }, ErrorCode::InvalidArgument,
               {"rank 2 called broadcast(f64[4], root 0)"});
  EXPECT_THROW(s.synchronize(), Error);
  const Tensor ok = ones({5}, DType::i32, s);
  world.all_reduce(ok, ReduceOp::sum, s).wait();
  EXPECT_TRUE(same_values(read(ok, s), std::vector<double>(5, world.size()), DType::i32));
  world.barrier(s).wait();
}

TEST(MpiWorld, ARecvLargerThanItsSendSaysSo) {
  Communicator world = Communicator::world();
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  Stream s = device("cpu:0").create_stream();
  if (world.rank() == 0) {
    world.send(ones({3}, DType::f32, s), 1, s, 9).wait();
  } else if (world.rank() == 1) {
    const Tensor into = zeros({4}, DType::f32, s);
    expect_error([&] { world.recv(into, 0, s, 9).wait(); }, ErrorCode::InvalidArgument,
                 {"recv #1 from rank 0 (tag 9)", "sent 3 elements", "holds 4"});
    EXPECT_THROW(s.synchronize(), Error);
  }
  world.barrier(s).wait();
}

// A recv of another dtype than its send is refused before its data is taken, naming both sides
// (it took the bytes as its own dtype, or counted them in it); the refused message is taken all
// the same, so that the pair's next send meets the next recv.
TEST(MpiWorld, ARecvOfAnotherDtypeThanItsSendSaysSo) {
  Communicator world = Communicator::world();
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  Stream s = device("cpu:0").create_stream();
  if (world.rank() == 0) {
    world.send(ones({4}, DType::f32, s), 1, s, 11).wait();
    world.send(ones({4}, DType::f16, s), 1, s, 11).wait();
    world.send(ones({1031}, DType::f64, s), 1, s, 11).wait();  // past the eager limit
    world.send(full({3}, 2.0, DType::f32, s), 1, s, 11).wait();
    world.send(full({2}, 5.0, DType::i64, s), 1, s, 11).wait();
  } else if (world.rank() == 1) {
    const Tensor as_i32 = zeros({4}, DType::i32, s);
    expect_error([&] { world.recv(as_i32, 0, s, 11).wait(); }, ErrorCode::InvalidArgument,
                 {"from rank 0 (tag 11)", "rank 0 sent 4 elements of f32 (16 bytes)",
                  "holds 4 elements of i32 (16 bytes)"});
    EXPECT_THROW(s.synchronize(), Error);
    EXPECT_TRUE(same_values(read(as_i32, s), std::vector<double>(4, 0.0), DType::i32));
    const Tensor as_f32 = zeros({4}, DType::f32, s);
    expect_error([&] { world.recv(as_f32, 0, s, 11).wait(); }, ErrorCode::InvalidArgument,
                 {"rank 0 sent 4 elements of f16 (8 bytes)", "holds 4 elements of f32 (16 bytes)"});
    EXPECT_THROW(s.synchronize(), Error);
    const Tensor same_bytes = zeros({2062}, DType::f32, s);
    expect_error([&] { world.recv(same_bytes, 0, s, 11).wait(); }, ErrorCode::InvalidArgument,
                 {"rank 0 sent 1031 elements of f64", "holds 2062 elements of f32"});
    EXPECT_THROW(s.synchronize(), Error);
    // Two dtypes on one tag, each received as sent.
    const Tensor floats = zeros({3}, DType::f32, s), longs = zeros({2}, DType::i64, s);
    Work first = world.recv(floats, 0, s, 11);
    Work second = world.recv(longs, 0, s, 11);
    first.wait();
    second.wait();
    EXPECT_TRUE(same_values(read(floats, s), std::vector<double>(3, 2.0), DType::f32));
    EXPECT_TRUE(same_values(read(longs, s), std::vector<double>(2, 5.0), DType::i64));
  }
  world.barrier(s).wait();
}

// Max and min of f32 and f64 in MPI's collective (past the exchange's 64 bytes) as in the
// exchange and in f16 and bf16: a NaN on any one rank is the result on every rank (MPI_MAX and
// MPI_MIN kept or dropped it by the ranks' order).
TEST(MpiWorld, MaxAndMinKeepANaNFromAnyRank) {
  Communicator world = Communicator::world();
  Stream s = device("cpu:0").create_stream();
  const int p = world.size();
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (int64_t count : {int64_t{5}, int64_t{1031}})
      for (ReduceOp op : {ReduceOp::max, ReduceOp::min})
        for (int holder = 0; holder < p; ++holder) {
          SCOPED_TRACE(std::string(to_string(dtype)) + " " + std::string(to_string(op)) +
                       " n=" + std::to_string(count) + ", NaN on rank " + std::to_string(holder));
          const size_t at = static_cast<size_t>(count / 2);
          std::vector<double> mine = values(world.rank(), count, dtype);
          if (world.rank() == holder) mine[at] = std::nan("");
          const Tensor t = tensor_of(mine, dtype, s);
          world.all_reduce(t, op, s).wait();
          std::vector<double> got = read(t, s);
          EXPECT_TRUE(std::isnan(got[at])) << "element " << at << " is " << got[at];
          std::vector<double> expected = reduced(op, dtype, p, count);
          got[at] = expected[at] = 0.0;
          EXPECT_TRUE(same_values(got, expected, dtype));
          const int root = (holder + 1) % p;
          const Tensor out =
              world.rank() == root ? empty({count}, dtype, device("cpu:0")) : Tensor();
          world.reduce(tensor_of(mine, dtype, s), out, op, root, s).wait();
          if (world.rank() == root) {
            EXPECT_TRUE(std::isnan(read(out, s)[at])) << "reduce to root " << root;
          }
        }
}

// HAL_DIST_DEBUG=detail (shapes compared too) on every rank: a reduce whose output the root
// alone passes is valid, in the exchange (13 elements) and in MPI's collective (1031); outputs
// of other shapes are named.
TEST(MpiWorld, DetailAcceptsAReduceWhoseOutputIsTheRootsAlone) {
  const DebugLevel detail("detail");
  Communicator world = Communicator::world();
  Stream s = device("cpu:0").create_stream();
  const int p = world.size();
  for (int64_t count : {int64_t{13}, int64_t{1031}})
    for (int root = 0; root < p; ++root)
      for (bool in_place : {true, false}) {
        SCOPED_TRACE("n=" + std::to_string(count) + " root " + std::to_string(root) +
                     (in_place ? " in place" : " out of place"));
        const Tensor in = tensor_of(values(world.rank(), count, DType::f32), DType::f32, s);
        const Tensor out = world.rank() != root ? Tensor()
                           : in_place           ? in
                                                : empty({count}, DType::f32, device("cpu:0"));
        world.reduce(in, out, ReduceOp::sum, root, s).wait();
        if (world.rank() == root) {
          EXPECT_TRUE(
              same_values(read(out, s), reduced(ReduceOp::sum, DType::f32, p, count), DType::f32));
        }
      }
  if (p < 2) return;
  const Tensor in = ones({13}, DType::f32, s);
  const Tensor out =
      empty(world.rank() == 1 ? Shape{p * 13} : Shape{p, 13}, DType::f32, device("cpu:0"));
  expect_error([&] { world.all_gather(in, out, s).wait(); }, ErrorCode::InvalidArgument,
               {"rank 0 called all_gather(f32[13] into f32[" + std::to_string(p) + ", 13])",
                "rank 1 called all_gather(f32[13] into f32[" + std::to_string(p * 13) + "])"});
  EXPECT_THROW(s.synchronize(), Error);
  world.barrier(s).wait();
}

// MPI's counts are int (Open MPI 4.1 has no MPI-4 big-count calls): a collective of more than
// HAL_DIST_MPI_MAX_ELEMENTS elements (2^31 - 1 unless lowered, here to 100) is refused with
// InvalidArgument before anything is posted, where it was run on a truncated count; its data is
// untouched. A rank alone past it is named to the others at once, not after HAL_DIST_TIMEOUT
// (20 s in dist_mpi_collectives); the communicator goes on, and a call at the limit runs.
TEST(MpiWorld, ACollectivePastMpisElementCountIsRefusedOnEveryRank) {
  const ScopedSetting limit("HAL_DIST_MPI_MAX_ELEMENTS", "100");
  Communicator world = Communicator::world();
  Stream s = device("cpu:0").create_stream();
  const int p = world.size();
  const Tensor big = full({101}, 1.0 + world.rank(), DType::f32, s);
  expect_error([&] { world.all_reduce(big, ReduceOp::sum, s); }, ErrorCode::InvalidArgument,
               {"all_reduce #", "on communicator 'world'", "101 elements of f32 (404 bytes)",
                "exceed the 100 elements one MPI call takes", "no rank runs it"});
  EXPECT_TRUE(same_values(read(big, s), std::vector<double>(101, 1.0 + world.rank()), DType::f32));
  // All-gather's output holds every rank's part: p * part elements past the limit.
  const int64_t part = 100 / p + 1;
  const Tensor gathered = empty({p, part}, DType::u8, device("cpu:0"));
  expect_error([&] { world.all_gather(ones({part}, DType::u8, s), gathered, s); },
               ErrorCode::InvalidArgument,
               {"all_gather #", std::to_string(p * part) + " elements of u8"});
  if (p >= 2 && world.rank() < 2) {
    const Tensor t = ones({101}, DType::boolean, s);
    expect_error([&] { world.rank() == 0 ? world.send(t, 1, s, 5) : world.recv(t, 0, s, 5); },
                 ErrorCode::InvalidArgument,
                 {world.rank() == 0 ? "send #" : "recv #", "101 elements of bool (101 bytes)"});
  }
  // Rank 0 alone past it: the others fail at once, naming it and why.
  const Tensor mixed = zeros({world.rank() == 0 ? 101 : 100}, DType::f32, s);
  const auto start = std::chrono::steady_clock::now();
  if (world.rank() == 0) {
    expect_error([&] { world.all_reduce(mixed, ReduceOp::sum, s); }, ErrorCode::InvalidArgument,
                 {"101 elements of f32 (404 bytes)", "exceed the 100 elements"});
  } else {
    expect_error([&] { world.all_reduce(mixed, ReduceOp::sum, s).wait(); }, ErrorCode::InvalidState,
                 {"all_reduce #", "rank 0 could not take part: InvalidArgument: all_reduce #",
                  "101 elements of f32 (404 bytes)"});
    EXPECT_THROW(s.synchronize(), Error);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  const Tensor fits = ones({100}, DType::f32, s);
  world.all_reduce(fits, ReduceOp::sum, s).wait();
  EXPECT_TRUE(same_values(read(fits, s), std::vector<double>(100, p), DType::f32));
  {
    const ScopedSetting malformed("HAL_DIST_MPI_MAX_ELEMENTS", "0");
    expect_error([&] { world.all_reduce(fits, ReduceOp::sum, s); }, ErrorCode::InvalidArgument,
                 {"HAL_DIST_MPI_MAX_ELEMENTS: '0' is out of range (1 to 2147483647)"});
  }
  world.barrier(s).wait();
}

TEST(MpiWorld, ThreadsShareTheCommunicatorInOneOrder) {
  // Two streams of one rank, each with its own collectives in turn: the calls' order decides.
  Communicator world = Communicator::world();
  Device cpu = device("cpu:0");
  Stream a = cpu.create_stream(), b = cpu.create_stream();
  std::vector<Tensor> t;
  std::vector<Work> works;
  for (int i = 0; i < 20; ++i) {
    Stream& s = i % 2 ? a : b;
    t.push_back(full({3 + i}, 1.0 + i, DType::f64, s));
    works.push_back(world.all_reduce(t.back(), ReduceOp::sum, s));
  }
  for (Work& w : works) w.wait();
  for (int i = 0; i < 20; ++i)
    EXPECT_TRUE(same_values(read(t[i], i % 2 ? a : b),
                            std::vector<double>(3 + i, (1.0 + i) * world.size()), DType::f64));
}

// CTest runs this with four sim devices a process (dist_mpi_mesh_local_rank): each of the four
// processes takes the sim device at its local rank (they all took the first device of a backend
// with one, vulkan:0 here), and a sum over the mesh adds one value from each.
TEST(MpiMesh, OneDeviceAProcessIsTheOneAtItsLocalRank) {
  const dist::DeviceMesh mesh = dist::DeviceMesh::create({4}, {"dp"});
  ASSERT_EQ(mesh.devices().size(), 1u);
  const int local = dist::launch_info().local_rank;
  EXPECT_EQ(mesh.devices()[0].id(), "sim:" + std::to_string(local));
  const dist::SubMesh dp = mesh["dp"];
  Stream stream = dp.device().create_stream();
  const Tensor t = full({3}, 1.0 + mesh.process_rank(), DType::f32, stream);
  dp.communicator().all_reduce(t, ReduceOp::sum, stream).wait();
  EXPECT_EQ(t.to_vector<float>(stream), std::vector<float>(3, 1 + 2 + 3 + 4));
}

}  // namespace
}  // namespace hal::test
