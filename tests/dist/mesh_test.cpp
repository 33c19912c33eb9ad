// DeviceMesh in one process: sub-meshes per named dimension over sim devices, their local
// communicators at work, the layout rules and their errors, and a 32 x 32 mesh over 1 024 sim
// devices (HAL_SIM_CONFIG=devices=1024 in CTest's dist_mesh_1024).
#include <gtest/gtest.h>

#include <type_traits>

#include "dist_reference.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using dist::DeviceMesh;
using dist::Engine;
using dist::ReduceOp;
using dist::SubMesh;
using dist::Work;

dist::MeshOptions of_backend(const std::string& backend) {
  dist::MeshOptions options;
  options.backend = backend;
  return options;
}

dist::MeshOptions of_devices(std::vector<Device> list) {
  dist::MeshOptions options;
  options.devices = std::move(list);
  return options;
}

size_t sim_count() {
  size_t n = 0;
  for (const Device& d : devices()) n += d.info().backend() == "sim";
  return n;
}

TEST(DeviceMeshTest, TwoByTwoOverFourSimDevices) {
  if (sim_count() != 4) GTEST_SKIP() << "needs exactly 4 sim devices (HAL_SIM_CONFIG=devices=4)";
  const DeviceMesh mesh = DeviceMesh::create({2, 2}, {"dp", "tp"}, of_backend("sim"));
  EXPECT_EQ(mesh.size(), 4);
  EXPECT_EQ(mesh.process_count(), 1);
  ASSERT_EQ(mesh.devices().size(), 4u);
  EXPECT_EQ(mesh.devices()[3].id(), "sim:3");
  EXPECT_EQ(mesh.coordinates(3), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(mesh.engine("tp"), Engine::local);
  // tp groups are rows (0, 1) and (2, 3); dp groups are columns (0, 2) and (1, 3).
  const SubMesh tp = mesh.sub_mesh("tp", 2);
  EXPECT_EQ(tp.ranks(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tp.rank(), 0);
  EXPECT_EQ(tp.device().id(), "sim:2");
  EXPECT_EQ(tp.communicator().size(), 2);
  EXPECT_EQ(tp.communicator().name(), "tp [1, *]");
  const SubMesh dp = mesh["dp"];
  EXPECT_EQ(dp.ranks(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(mesh.sub_mesh("dp", 3).rank(), 1);

  // Sum along dp, then along tp: every rank ends with the total of all four.
  std::vector<Stream> streams;
  std::vector<Tensor> t;
  for (size_t j = 0; j < 4; ++j) {
    streams.push_back(mesh.devices()[j].create_stream());
    t.push_back(tensor_of(values(static_cast<int>(j), 10, DType::f32), DType::f32, streams[j]));
  }
  for (const char* dim : {"dp", "tp"}) {
    std::vector<Work> works;
    for (size_t j = 0; j < 4; ++j)
      works.push_back(
          mesh.sub_mesh(dim, j).communicator().all_reduce(t[j], ReduceOp::sum, streams[j]));
    for (Work& w : works) w.wait();
  }
  for (size_t j = 0; j < 4; ++j)
    EXPECT_TRUE(
        same_values(read(t[j], streams[j]), reduced(ReduceOp::sum, DType::f32, 4, 10), DType::f32));
}

TEST(DeviceMeshTest, ThreeDimensionsGroupAlongEachName) {
  if (sim_count() < 8) GTEST_SKIP() << "needs 8 sim devices";
  const DeviceMesh mesh = DeviceMesh::create({2, 2, 2}, {"pp", "dp", "tp"}, of_backend("sim"));
  EXPECT_EQ(mesh.sub_mesh("pp", 5).ranks(), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(mesh.sub_mesh("dp", 5).ranks(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(mesh.sub_mesh("tp", 5).ranks(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(mesh.sub_mesh("dp", 5).communicator().rank(), 0);
}

// A SubMesh comes by value, often as a temporary: what its accessors return must outlive it
// (they returned references into it, and `for (r : mesh["dp"].ranks())` read freed memory).
TEST(DeviceMeshTest, WhatASubMeshTemporaryReturnsOutlivesIt) {
  const DeviceMesh mesh = DeviceMesh::create({1}, {"dp"}, of_devices({device("cpu:0")}));
  std::vector<int64_t> seen;
  for (int64_t r : mesh["dp"].ranks()) seen.push_back(r);
  EXPECT_EQ(seen, std::vector<int64_t>{0});
  const auto& name = mesh["dp"].name();
  const auto& on = mesh["dp"].device();
  const auto& communicator = mesh["dp"].communicator();
  EXPECT_EQ(name, "dp");
  EXPECT_EQ(on.id(), "cpu:0");
  EXPECT_EQ(communicator.size(), 1);
  // Copies, not references into the SubMesh (without this, only a sanitizer would see it).
  const SubMesh& sub = mesh["dp"];
  EXPECT_FALSE(std::is_reference_v<decltype(sub.ranks())>);
  EXPECT_FALSE(std::is_reference_v<decltype(sub.name())>);
  EXPECT_FALSE(std::is_reference_v<decltype(sub.device())>);
  EXPECT_FALSE(std::is_reference_v<decltype(sub.communicator())>);
}

TEST(DeviceMeshTest, BadShapesAndNamesAreRefused) {
  expect_error(
      [] {
        DeviceMesh::create({2, 2}, {"dp"});
      },
      ErrorCode::InvalidArgument, {"1 names for 2 dimensions"});
  expect_error(
      [] {
        DeviceMesh::create({2, 2}, {"dp", "dp"});
      },
      ErrorCode::InvalidArgument, {"'dp' is given twice"});
  expect_error(
      [] {
        DeviceMesh::create({2, 0}, {"a", "b"});
      },
      ErrorCode::InvalidArgument, {"not positive"});
  expect_error([] { DeviceMesh::create({}, {}); }, ErrorCode::InvalidArgument, {"no dimensions"});
  expect_error([] { DeviceMesh::create({4}, {"x"}, of_devices({device("cpu:0")})); },
               ErrorCode::InvalidArgument, {"1 devices given", "needs 4"});
  expect_error([] { DeviceMesh::create({100000}, {"x"}, of_backend("cpu")); }, ErrorCode::NotFound,
               {"needs 100000 devices", "backend 'cpu'"});
  const DeviceMesh one = DeviceMesh::create({1}, {"x"}, of_devices({device("cpu:0")}));
  expect_error([&] { one.sub_mesh("y"); }, ErrorCode::InvalidArgument, {"no dimension 'y'", "x"});
  expect_error([&] { one.sub_mesh("x", 1); }, ErrorCode::OutOfRange, {"local device 1"});
  expect_error([] { DeviceMesh().size(); }, ErrorCode::InvalidArgument, {"empty"});
}

TEST(DeviceMeshTest, ThirtyTwoByThirtyTwoOverAThousandDevices) {
  if (sim_count() < 1024) GTEST_SKIP() << "needs 1024 sim devices (HAL_SIM_CONFIG=devices=1024)";
  const DeviceMesh mesh = DeviceMesh::create({32, 32}, {"dp", "tp"}, of_backend("sim"));
  EXPECT_EQ(mesh.size(), 1024);
  const SubMesh tp = mesh.sub_mesh("tp", 1000);
  EXPECT_EQ(tp.ranks().front(), 992);
  EXPECT_EQ(tp.rank(), 8);
  const SubMesh dp = mesh.sub_mesh("dp", 1000);
  EXPECT_EQ(dp.ranks().front(), 8);
  EXPECT_EQ(dp.ranks().back(), 1000);
  EXPECT_EQ(dp.rank(), 31);
  EXPECT_EQ(dp.communicator().size(), 32);
  // One tp group of 32 devices at work.
  std::vector<Stream> streams;
  std::vector<Tensor> t;
  std::vector<Work> works;
  for (int64_t k = 0; k < 32; ++k) {
    const SubMesh member = mesh.sub_mesh("tp", static_cast<size_t>(32 + k));
    streams.push_back(member.device().create_stream());
    t.push_back(full({3}, static_cast<double>(k), DType::f32, streams.back()));
  }
  for (int64_t k = 0; k < 32; ++k)
    works.push_back(mesh.sub_mesh("tp", static_cast<size_t>(32 + k))
                        .communicator()
                        .all_reduce(t[k], ReduceOp::sum, streams[k]));
  for (Work& w : works) w.wait();
  EXPECT_TRUE(
      same_values(read(t[31], streams[31]), std::vector<double>(3, 31 * 32 / 2), DType::f32));
}

}  // namespace
}  // namespace hal::test
