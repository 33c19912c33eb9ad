// What plugin ABI 1.3 added: host callbacks told whether their device was lost before they began
// (host_callback_status). A call that finds the device lost then waits for the device's work in
// flight but not for a host callback already running, which may be waiting for the very thread
// that made the call. CTest runs this group in its own process with
// HAL_SIM_CONFIG=devices=1,lose_device_at=40 (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <vector>

#include "hal/hal.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

// What a stream's synchronize reported: nothing, or the error's code and message.
struct Outcome {
  std::optional<ErrorCode> code;
  std::string message;
};

Outcome synchronize(Stream& stream) {
  try {
    stream.synchronize();
    return {};
  } catch (const Error& error) {
    return {error.code(), error.what()};
  }
}

// The CPU stream copies into sim:0 (staged: each copy is a host callback on the CPU's worker that
// writes through sim's transfer stream) while a stream of sim:0 waits for the CPU's event (a
// host callback of hal's on sim's worker). When one of those writes finds sim:0 lost, the plugin
// used to wait for all of sim's streams to go idle, the waiting callback among them: it waits
// for the CPU's event, which the CPU's worker records only after that write returns. Both
// waited for ever.
TEST(SimLostCallbacks, AStagedCopyThatFindsTheDeviceLostDoesNotWaitForACallbackWaitingForIt) {
  constexpr size_t kBytes = 4096;
  constexpr int kCopies = 16;  // each write a few calls to sim: the loss comes among them
  // Before the streams: their callbacks use these until the streams are gone.
  Gate gate;  // the copies start once sim's stream is waiting
  std::atomic<bool> waiting{false}, ran_after{false};
  const Device cpu = device("cpu:0"), sim = device("sim:0");
  Stream on_cpu = cpu.create_stream(), on_sim = sim.create_stream();
  const Buffer from = cpu.allocate(kBytes);
  std::vector<Buffer> to;
  for (int i = 0; i < kCopies; ++i) to.push_back(sim.allocate(kBytes));
  on_cpu.fill(from, uint8_t{7}, kBytes);
  on_cpu.synchronize();

  ASSERT_NO_THROW({
    on_cpu.host_callback(gate.hold());
    for (const Buffer& buffer : to) on_cpu.copy(buffer, from, kBytes);
    const Event copied = on_cpu.record();
    on_sim.host_callback([&] { waiting = true; });
    on_sim.wait(copied);
    on_sim.host_callback([&] { ran_after = true; });
  }) << "sim:0 was lost before the copies: HAL_SIM_CONFIG's lose_device_at is too early";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!waiting && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(waiting) << "sim's stream never reached the wait";
  gate.open();

  // A hang cannot be unwound: the watchdog ends the process, naming it.
  std::future<Outcome> cpu_done =
      std::async(std::launch::async, [&on_cpu] { return synchronize(on_cpu); });
  if (cpu_done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr,
                 "FAILED: the CPU stream's copy into lost sim:0 and sim's stream waiting for the "
                 "CPU's event still wait for each other after 60 s\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  const Outcome copies = cpu_done.get();
  ASSERT_TRUE(copies.code.has_value())
      << "sim:0 was never lost during the copies: HAL_SIM_CONFIG's lose_device_at is too late";
  // The CPU stream's work failed on another device: AsyncFailure, naming the loss.
  EXPECT_EQ(*copies.code, ErrorCode::AsyncFailure) << copies.message;
  for (const char* part : {"DeviceLost", "sim:0", "lost"})
    EXPECT_NE(copies.message.find(part), std::string::npos) << copies.message;

  const Outcome waited = synchronize(on_sim);
  ASSERT_TRUE(waited.code.has_value()) << "sim's stream did not report the loss";
  EXPECT_EQ(*waited.code, ErrorCode::DeviceLost) << waited.message;
  // Queued behind the wait when the device was lost: told so, it did not run.
  EXPECT_FALSE(ran_after) << "a host callback that began after the loss ran";
  // The host's other work goes on.
  std::vector<uint8_t> back(kBytes);
  on_cpu.copy_to_host(back.data(), from, kBytes);
  EXPECT_NO_THROW(on_cpu.synchronize());
  EXPECT_EQ(back, std::vector<uint8_t>(kBytes, 7));
}

}  // namespace
}  // namespace hal::test
