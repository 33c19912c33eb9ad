// The NCCL engine: the loader (a library that is absent, not a library, or present and of
// which version), the mapping of hal's dtypes and ops onto NCCL's, and, on a machine with a
// CUDA device, NCCL's collectives on it (a one-process communicator bootstrapped over MPI;
// under mpirun with a GPU per rank, across ranks). Without a GPU those skip, saying so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dist/nccl/nccl_api.hpp"
#include "dist/nccl/nccl_types.hpp"
#include "dist_reference.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using namespace hal::dist::detail;
using dist::ReduceOp;

TEST(NcclLoader, AnAbsentLibraryIsBackendUnavailableNamingIt) {
  expect_error([] { Nccl::open("/nonexistent/libnccl.so.2"); }, ErrorCode::BackendUnavailable,
               {"NCCL (/nonexistent/libnccl.so.2) cannot be opened", "HAL_NCCL_LIBRARY"});
}

TEST(NcclLoader, AFileThatIsNotALibraryIsRefused) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "hal_not_nccl.so";
  std::ofstream(path) << "not a shared library\n";
  expect_error([&] { Nccl::open(path.string()); }, ErrorCode::BackendUnavailable,
               {path.string(), "cannot be opened"});
  std::filesystem::remove(path);
}

TEST(NcclLoader, TheInstalledLibraryLoadsWithItsVersion) {
  std::string why;
  if (!dist::nccl_available(&why)) GTEST_SKIP() << "NCCL is not installed here: " << why;
  const auto nccl = Nccl::load();
  EXPECT_GE(nccl->version(), Nccl::kOldestVersion);
  EXPECT_EQ(nccl->version_name().substr(0, 2), "2.");
  EXPECT_NE(nccl->ncclAllReduce, nullptr);
  EXPECT_EQ(Nccl::load(), nccl);  // once per process
  EXPECT_NE(nccl->describe(ncclInvalidUsage).find("ncclInvalidUsage"), std::string::npos);
  expect_error([&] { nccl->check(ncclRemoteError, "here", "ncclAllReduce"); },
               ErrorCode::DeviceLost, {"here: ncclAllReduce failed: ncclRemoteError"});
}

TEST(NcclTypes, EveryDtypeAndOpHasItsNcclName) {
  EXPECT_EQ(nccl_dtype(DType::f32), ncclFloat32);
  EXPECT_EQ(nccl_dtype(DType::f16), ncclFloat16);
  EXPECT_EQ(nccl_dtype(DType::bf16), ncclBfloat16);
  EXPECT_EQ(nccl_dtype(DType::f64), ncclFloat64);
  EXPECT_EQ(nccl_dtype(DType::i8), ncclInt8);
  EXPECT_EQ(nccl_dtype(DType::u8), ncclUint8);
  EXPECT_EQ(nccl_dtype(DType::i32), ncclInt32);
  EXPECT_EQ(nccl_dtype(DType::i64), ncclInt64);
  EXPECT_EQ(nccl_dtype(DType::boolean), ncclUint8);
  EXPECT_EQ(nccl_dtype(DType::u32), ncclUint32);
  EXPECT_EQ(nccl_dtype(DType::u64), ncclUint64);
  // NCCL has no 16-bit integers: refused by name, not sent as another type.
  expect_error([] { nccl_dtype(DType::i16); }, ErrorCode::Unsupported, {"NCCL has no int16"});
  expect_error([] { nccl_dtype(DType::u16); }, ErrorCode::Unsupported, {"NCCL has no uint16"});
  EXPECT_EQ(nccl_op(ReduceOp::sum, DType::f32), ncclSum);
  EXPECT_EQ(nccl_op(ReduceOp::prod, DType::i32), ncclProd);
  EXPECT_EQ(nccl_op(ReduceOp::min, DType::f16), ncclMin);
  EXPECT_EQ(nccl_op(ReduceOp::max, DType::i8), ncclMax);
  EXPECT_EQ(nccl_op(ReduceOp::avg, DType::bf16), ncclAvg);
  // bool as logic on bytes: sum and max are "or", prod and min "and".
  EXPECT_EQ(nccl_op(ReduceOp::sum, DType::boolean), ncclMax);
  EXPECT_EQ(nccl_op(ReduceOp::max, DType::boolean), ncclMax);
  EXPECT_EQ(nccl_op(ReduceOp::prod, DType::boolean), ncclMin);
  EXPECT_EQ(nccl_op(ReduceOp::min, DType::boolean), ncclMin);
  EXPECT_EQ(error_code(ncclInvalidArgument), ErrorCode::InvalidArgument);
  EXPECT_EQ(error_code(ncclSystemError), ErrorCode::Internal);
  EXPECT_EQ(result_name(ncclInProgress), "ncclInProgress");
}

TEST(NcclEngine, RefusesDevicesThatAreNotCuda) {
  expect_error([] { dist::Communicator::nccl(device("cpu:0"), dist::Communicator()); },
               ErrorCode::InvalidArgument, {"cpu:0 is not a CUDA device"});
}

TEST(NcclEngine, CollectivesOnACudaDevice) {
  Device gpu;
  for (const Device& d : devices())
    if (d.info().backend() == "cuda") {
      gpu = d;
      break;
    }
  if (!gpu) GTEST_SKIP() << "no CUDA device here: NCCL's collectives need a GPU";
  std::string why;
  if (!dist::nccl_available(&why)) GTEST_SKIP() << "NCCL does not load: " << why;
  const dist::Communicator world = dist::Communicator::world();
  dist::Communicator comm = dist::Communicator::nccl(gpu, world);
  EXPECT_EQ(comm.engine(), dist::Engine::nccl);
  Stream s = gpu.create_stream();
  for (DType dtype : all_dtypes())
    for (ReduceOp op : all_ops()) {
      if (op == ReduceOp::avg && !floating(dtype)) continue;
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + std::string(to_string(op)));
      const Tensor t = tensor_of(values(comm.rank(), 1031, dtype), dtype, s);
      comm.all_reduce(t, op, s).wait();
      ASSERT_TRUE(same_values(read(t, s), reduced(op, dtype, comm.size(), 1031), dtype));
    }
  const Tensor gathered = empty({comm.size(), 13}, DType::f32, gpu);
  comm.all_gather(tensor_of(values(comm.rank(), 13, DType::f32), DType::f32, s), gathered, s)
      .wait();
  std::vector<double> expected;
  for (int r = 0; r < comm.size(); ++r)
    for (double v : values(r, 13, DType::f32)) expected.push_back(v);
  EXPECT_TRUE(same_values(read(gathered, s), expected, DType::f32));
  comm.barrier(s).wait();
}

}  // namespace
}  // namespace hal::test
