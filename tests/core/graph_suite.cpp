// Graphs on every device: captured work replays, in order, as often as asked, on devices that
// have graphs; elsewhere capture is Unsupported and names the device.
#include <numeric>

#include "device_suite.hpp"

namespace hal::test {
namespace {

using GraphSuite = DeviceTest;

TEST_P(GraphSuite, CapturedWorkReplaysInOrderOrCaptureIsUnsupported) {
  Stream stream = device().create_stream();
  if (!device().info().has_feature(feature::kGraphs)) {
    expect_error([&] { stream.begin_capture(); }, ErrorCode::Unsupported,
                 {device().info().id, "graphs"});
    stream.synchronize();  // the stream is untouched
    return;
  }
  const size_t count = 4096;
  std::vector<uint32_t> input(count);
  std::iota(input.begin(), input.end(), 1u);
  Buffer a = device().allocate(count * 4);
  Buffer b = device().allocate(count * 4);
  stream.copy_from_host(a, input.data(), count * 4);
  stream.synchronize();

  // Each replay copies a into b, then overwrites a: the second replay sees the first's fill.
  stream.begin_capture();
  stream.copy(b, a, count * 4);
  stream.fill(a, uint32_t{7}, count);
  Graph graph = stream.end_capture();
  EXPECT_GE(graph.node_count(), 2u);
  EXPECT_EQ(graph.device(), device());

  std::vector<uint32_t> out(count);
  stream.copy_to_host(out.data(), b, count * 4);
  stream.synchronize();
  EXPECT_NE(out, input) << "captured work must not run before it is replayed";

  stream.launch(graph);
  stream.copy_to_host(out.data(), b, count * 4);
  stream.synchronize();
  EXPECT_EQ(out, input);
  stream.launch(graph);
  stream.copy_to_host(out.data(), b, count * 4);
  stream.synchronize();
  EXPECT_EQ(out, std::vector<uint32_t>(count, 7u));
}

TEST_P(GraphSuite, CaptureStateIsChecked) {
  Stream stream = device().create_stream();
  expect_error([&] { stream.launch(Graph()); }, ErrorCode::InvalidArgument, {"empty graph"});
  if (!device().info().has_feature(feature::kGraphs))
    GTEST_SKIP() << device().info().id << " has no graphs";
  expect_error([&] { stream.end_capture(); }, ErrorCode::InvalidState, {"not capturing"});
  stream.begin_capture();
  expect_error([&] { stream.begin_capture(); }, ErrorCode::InvalidState, {"capturing"});
  expect_error([&] { stream.synchronize(); }, ErrorCode::InvalidState, {"capturing"});
  expect_error([&] { stream.host_callback([] {}); }, ErrorCode::InvalidState, {"capturing"});
  Buffer a = device().allocate(256);
  stream.fill(a, uint8_t{1}, 256);
  Graph graph = stream.end_capture();
  stream.launch(graph);
  stream.synchronize();
}

HAL_DEVICE_SUITE(GraphSuite);

}  // namespace
}  // namespace hal::test
