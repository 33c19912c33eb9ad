// Device::synchronize and hal::synchronize_all: every stream of a device, of every device, is
// waited for; failures are thrown after all of them were; a stream's own host callback is
// refused; streams made and dropped from many threads meanwhile are no trouble. CTest runs this
// group with HAL_SIM_CONFIG=devices=2 (and the far test backend).
#include <atomic>
#include <thread>

#include "fleet.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

std::vector<Device> every_kind() {
  std::vector<Device> devices{device("cpu:0"), device("far:0")};
  for (const Device& sim : sim_devices(2)) devices.push_back(sim);
  return devices;
}

// Opens `gate` after `seconds` unless the test did first: a test that would hang fails instead.
class Watchdog {
 public:
  Watchdog(Gate& gate, int seconds)
      : thread_([this, &gate, seconds] {
          std::unique_lock lock(mutex_);
          changed_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; });
          gate.open();
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  std::thread thread_;
};

TEST(SynchronizeAll, WaitsForEveryStreamOfEveryDevice) {
  const std::vector<Device> devices = every_kind();
  ASSERT_EQ(devices.size(), 4u) << "needs sim:0 and sim:1 (HAL_SIM_CONFIG=devices=2)";
  std::vector<Stream> streams;
  for (const Device& d : devices)
    for (int i = 0; i < 2; ++i) streams.push_back(d.create_stream());
  std::atomic<int> ran{0};
  Gate gate;
  for (Stream& s : streams) {
    s.host_callback(gate.hold());
    s.host_callback([&ran] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 0);
  std::thread opener([&gate] { gate.open(); });
  synchronize_all();
  EXPECT_EQ(ran.load(), static_cast<int>(streams.size()));
  opener.join();
}

TEST(SynchronizeAll, ADeviceWaitsForItsOwnStreamsOnly) {
  const std::vector<Device> sims = sim_devices(2);
  ASSERT_EQ(sims.size(), 2u);
  Stream held = sims[0].create_stream(), free = sims[1].create_stream();
  std::atomic<int> held_ran{0}, free_ran{0};
  Gate gate;
  Watchdog watchdog(gate, 30);
  held.host_callback(gate.hold());
  held.host_callback([&] { ++held_ran; });
  free.host_callback([&] { ++free_ran; });
  sims[1].synchronize();
  EXPECT_EQ(free_ran.load(), 1);
  EXPECT_EQ(held_ran.load(), 0) << "sim:1's synchronize waited for sim:0 (or the watchdog)";
  gate.open();
  sims[0].synchronize();
  EXPECT_EQ(held_ran.load(), 1);
}

TEST(SynchronizeAll, AFailureIsThrownAfterEveryStreamWasWaitedFor) {
  const std::vector<Device> devices = every_kind();
  Stream failing = devices[0].create_stream();
  std::vector<Stream> others;
  for (const Device& d : devices) others.push_back(d.create_stream());
  std::atomic<int> ran{0};
  Gate gate;
  failing.host_callback([] { throw std::runtime_error("callback broke"); });
  for (Stream& s : others) {
    s.host_callback(gate.hold());
    s.host_callback([&ran] { ++ran; });
  }
  std::thread opener([&gate] { gate.open(); });
  expect_error([] { synchronize_all(); }, ErrorCode::AsyncFailure, {"callback broke"});
  EXPECT_EQ(ran.load(), static_cast<int>(others.size()));
  opener.join();
  synchronize_all();  // the failure was reported once
}

TEST(SynchronizeAll, FromAStreamsOwnHostCallbackIsRefused) {
  Stream stream = device("cpu:0").create_stream();
  std::optional<ErrorCode> code;
  std::string message;
  stream.host_callback([&] {
    try {
      synchronize_all();
    } catch (const Error& error) {
      code = error.code();
      message = error.message();
    }
  });
  stream.synchronize();
  ASSERT_TRUE(code.has_value()) << "synchronize_all waited for the callback that called it";
  EXPECT_EQ(*code, ErrorCode::InvalidState);
  EXPECT_NE(message.find("wait for itself"), std::string::npos) << message;
}

TEST(SynchronizeAll, AnEmptyDeviceIsRefused) {
  expect_error([] { Device().synchronize(); }, ErrorCode::InvalidArgument, {"empty"});
}

TEST(SynchronizeAll, StreamsMadeAndDroppedFromManyThreadsMeanwhile) {
  const std::vector<Device> devices = every_kind();
  constexpr int kThreads = 4, kStreams = 40;
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kStreams; ++i) {
        Stream s = devices[(t + i) % devices.size()].create_stream();
        s.host_callback([&ran] { ++ran; });
        if (i % 8 == 0) synchronize_all();
      }
    });
  for (int i = 0; i < 10; ++i) synchronize_all();
  for (std::thread& thread : threads) thread.join();
  synchronize_all();
  EXPECT_EQ(ran.load(), kThreads * kStreams);  // a dropped stream finishes its work first
}

}  // namespace
}  // namespace hal::test
