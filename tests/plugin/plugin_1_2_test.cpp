// What plugin ABI 1.2 added, through hal and the simulated accelerator: pinned host memory,
// copies between devices without the host, local-memory kernel arguments; a plugin built
// against the 1.1 header (sim_v1_1) still running ops and kernels through hal; and work that
// lets go of its buffers once it completes. CTest runs these with the Plugins group's
// HAL_SIM_CONFIG (3 devices of 64 MiB, 100 GB/s, 5 us per operation).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "hal/hal.hpp"
#include "hal/ops.hpp"
#include "hal/plugin_discovery.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

TEST(Plugins, PinnedHostMemoryIsTheHostsAndTheDevices) {
  Device sim = device("sim:0");
  ASSERT_TRUE(sim.info().has_feature(feature::kPinnedHostMemory));
  Stream stream = sim.create_stream();
  stream.synchronize();
  const uint64_t free_before = sim.memory_free().bytes;
  Buffer pinned = sim.allocate(4096, MemoryKind::pinned_host, AllocationMode::direct);
  EXPECT_EQ(pinned.kind(), MemoryKind::pinned_host);
  ASSERT_TRUE(pinned.host_accessible());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pinned.host_data()) % 256, 0u);
  EXPECT_EQ(sim.memory_free().bytes, free_before) << "pinned memory is the host's";
  auto* bytes = pinned.data<unsigned char>();
  for (size_t i = 0; i < 4096; ++i) bytes[i] = static_cast<unsigned char>(i * 3);
  const std::vector<unsigned char> written(bytes, bytes + 4096);
  Buffer on_device = sim.allocate(4096);
  stream.copy(on_device, pinned, 4096);  // the device reads the pinned buffer itself
  stream.fill(pinned, uint8_t{0}, 4096);
  stream.copy(pinned, on_device, 4096);
  stream.synchronize();
  EXPECT_EQ(std::vector<unsigned char>(bytes, bytes + 4096), written);

  Device old = device("sim_v1_1:0");
  EXPECT_FALSE(old.info().has_feature(feature::kPinnedHostMemory)) << "1.1 has no pinned memory";
  expect_error([&] { old.allocate(4096, MemoryKind::pinned_host); }, ErrorCode::InvalidArgument,
               {"sim_v1_1:0", "pinned_host"});
}

TEST(Plugins, CopiesBetweenSimDevicesGoPeerToPeer) {
  // A peer copy is one operation over the bytes at the bandwidth: 5 us + 1 MiB / 100 GB/s of
  // simulated time. Staged through the host it would be two copies and a host callback, whose
  // wall-clock time the simulated stream counts too.
  const size_t bytes = 1 << 20;
  Device from = device("sim:0"), to = device("sim:1");
  Stream source = from.create_stream(), stream = to.create_stream();
  Buffer a = from.allocate(bytes), b = to.allocate(bytes);
  std::vector<unsigned char> in(bytes), out(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 1);
  source.copy_from_host(a, in.data(), bytes);
  source.synchronize();
  Event start = stream.record();
  stream.copy(b, a, bytes);
  Event end = stream.record();
  stream.copy_to_host(out.data(), b, bytes);
  stream.synchronize();
  EXPECT_EQ(out, in);
  const double expected_ms = (5.0 + bytes / 100.0 / 1000.0) / 1000.0;
  EXPECT_NEAR(Event::elapsed_ms(start, end), expected_ms, expected_ms * 1e-6);
}

TEST(Plugins, SimKernelsTakeLocalMemoryArguments) {
  Device sim = device("sim:0");
  EXPECT_EQ(sim.info().limits.max_shared_memory_bytes, 48u * 1024);
  Stream stream = sim.create_stream();
  const Kernel group_sum =
      sim.compile({"group_sum_f32", "kernel group_sum_f32", KernelLanguage::native});
  const uint32_t n = 1000, group = 64, groups = (n + group - 1) / group;
  std::vector<float> in(n);
  std::iota(in.begin(), in.end(), 0.0f);
  Buffer bin = sim.allocate(n * 4), bout = sim.allocate(groups * 4);
  stream.copy_from_host(bin, in.data(), n * 4);
  LaunchConfig config = LaunchConfig::linear(groups * group);
  config.local = {group, 1, 1};
  stream.launch(group_sum, config, {bin, bout, KernelArg::local_memory(group * 4), n});
  std::vector<float> sums(groups);
  stream.copy_to_host(sums.data(), bout, groups * 4);
  stream.synchronize();
  for (uint32_t g = 0; g < groups; ++g) {
    float want = 0;
    for (uint32_t i = g * group; i < std::min(n, (g + 1) * group); ++i) want += in[i];
    EXPECT_EQ(sums[g], want) << "group " << g;
  }

  expect_error(
      [&] {
        stream.launch(group_sum, config, {bin, bout, KernelArg::local_memory(16), n});
      },
      ErrorCode::InvalidArgument, {"sim:0", "group_sum_f32", "4 bytes of local memory per item"});
  expect_error(
      [&] {
        stream.launch(group_sum, config, {bin, bout, KernelArg::local_memory(64 * 1024), n});
      },
      ErrorCode::InvalidArgument, {"sim:0", "group_sum_f32", "65536", "49152"});
  // A native kernel's signature is the plugin's: hal itself refuses an empty local argument.
  expect_error(
      [&] {
        stream.launch(group_sum, config, {bin, bout, KernelArg::local_memory(0), n});
      },
      ErrorCode::InvalidArgument, {"group_sum_f32", "argument 2", "0 bytes of local memory"});
  stream.synchronize();

  Device old = device("sim_v1_1:0");
  Stream old_stream = old.create_stream();
  const Kernel iota = old.compile({"iota_u32", "kernel iota_u32", KernelLanguage::native});
  Buffer out = old.allocate(16);
  expect_error(
      [&] {
        old_stream.launch(iota, LaunchConfig::linear(4), {out, KernelArg::local_memory(16)});
      },
      ErrorCode::Unsupported, {"sim_v1_1:0", "local memory"});
}

// hal hands a plugin of 1.1 the tensors and kernel arguments of its own header, without
// struct_size: were they 1.2's, every field would be read 8 bytes off.
TEST(Plugins, APluginBuiltAgainstTheOneOneHeaderRunsOpsAndKernels) {
  const auto all = plugins();
  bool listed = false;
  for (const PluginInfo& info : all)
    if (info.name == "sim_v1_1") {
      listed = true;
      EXPECT_TRUE(info.loaded) << info.reason;
      EXPECT_EQ(info.abi_version, "1.1");
    }
  ASSERT_TRUE(listed);
  Device old = device("sim_v1_1:0");
  Stream s = old.create_stream();
  const Tensor x = from_vector(std::vector<float>{1, -2, 3, -4, 5, -6}, {2, 3}, s);
  const Tensor y = from_vector(std::vector<float>{10, 20, 30}, {3}, s);
  EXPECT_EQ(add(x, y, s).to_vector<float>(s), (std::vector<float>{11, 18, 33, 6, 25, 24}));
  EXPECT_EQ(relu(x, s).to_vector<float>(s), (std::vector<float>{1, 0, 3, 0, 5, 0}));
  EXPECT_EQ(sum(x, {1}, false, s).to_vector<float>(s), (std::vector<float>{2, -5}));

  const Kernel saxpy = old.compile({"saxpy", "kernel saxpy", KernelLanguage::native});
  std::vector<float> vx{1, 2, 3, 4}, vy{1, 1, 1, 1};
  Buffer bx = old.allocate(16), by = old.allocate(16);
  s.copy_from_host(bx, vx.data(), 16);
  s.copy_from_host(by, vy.data(), 16);
  s.launch(saxpy, LaunchConfig::linear(4), {2.0f, bx, by, 3u});
  s.copy_to_host(vy.data(), by, 16);
  s.synchronize();
  EXPECT_EQ(vy, (std::vector<float>{3, 5, 7, 1}));
}

TEST(Plugins, WorkLetsGoOfItsBuffersOnceItCompletesWithoutASynchronize) {
  // 200 MiB pass through a device of 64 MiB: each buffer is dropped while its fill is pending,
  // and the stream is never synchronised, only an event after each fill waited for.
  Device sim = device("sim:1");
  Stream stream = sim.create_stream();
  stream.synchronize();
  const uint64_t before = sim.allocator().stats().allocated_bytes.current;
  for (int i = 0; i < 200; ++i) {
    {
      Buffer scratch = sim.allocate(1 << 20);
      stream.fill(scratch, uint8_t{1}, scratch.size());
    }  // only the pending fill holds the buffer now
    stream.record().synchronize();
    ASSERT_LE(sim.allocator().stats().allocated_bytes.current, before + (2 << 20))
        << "after " << i + 1 << " fills: completed work still holds its buffers";
  }
}

}  // namespace
}  // namespace hal::test
