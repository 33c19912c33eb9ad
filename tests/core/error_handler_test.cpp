// hal::set_error_handler: every error hal raises reaches the handler once, with its code,
// message, device and op, from any thread; errors hal handles itself do not.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hal/hal.hpp"
#include "hal/ops.hpp"

namespace hal {
namespace {

struct Seen {
  ErrorCode code;
  std::string message, device, op;
};

// Installs a handler that records every report; removes it again at the end of the test.
class Recorder {
 public:
  Recorder() {
    set_error_handler([this](const ErrorReport& report) {
      std::lock_guard lock(mutex_);
      seen_.push_back({report.code, std::string(report.message), std::string(report.device),
                       std::string(report.op)});
    });
  }
  ~Recorder() { set_error_handler(nullptr); }
  std::vector<Seen> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Seen> seen_;
};

TEST(ErrorHandler, ReceivesEachErrorOnceWithItsDeviceAndOp) {
  Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  const Tensor a = zeros({2, 3}, DType::f32, stream), b = zeros({4}, DType::f32, stream);
  Recorder recorder;
  std::string thrown;
  try {
    add(a, b, stream);
  } catch (const Error& error) {
    thrown = error.message();
    EXPECT_EQ(error.device(), "cpu:0");
    EXPECT_EQ(error.op(), "add");
  }
  EXPECT_THROW(cpu.allocate(0), Error);
  const std::vector<Seen> seen = recorder.seen();
  ASSERT_EQ(seen.size(), 2u) << "one report per error: the rewrapped broadcast error is one";
  EXPECT_EQ(seen[0].code, ErrorCode::InvalidArgument);
  EXPECT_EQ(seen[0].message, thrown);
  EXPECT_EQ(seen[0].device, "cpu:0");
  EXPECT_EQ(seen[0].op, "add");
  EXPECT_EQ(seen[1].op, "allocate");
  EXPECT_NE(seen[1].message.find("0 bytes"), std::string::npos) << seen[1].message;
}

TEST(ErrorHandler, AsynchronousFailuresAreReportedWhereSynchronizeFindsThem) {
  Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  Recorder recorder;
  stream.launch(host_kernel("fails", [](const KernelChunk&) { throw std::runtime_error("boom"); }),
                LaunchConfig::linear(1), {});
  EXPECT_THROW(stream.synchronize(), Error);
  const std::vector<Seen> seen = recorder.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].code, ErrorCode::AsyncFailure);
  EXPECT_EQ(seen[0].device, "cpu:0");
  EXPECT_EQ(seen[0].op, "synchronize");
  EXPECT_NE(seen[0].message.find("boom"), std::string::npos) << seen[0].message;
}

TEST(ErrorHandler, ComesFromManyThreadsAtOnce) {
  Device cpu = device("cpu:0");
  std::atomic<int> reports{0};
  set_error_handler([&](const ErrorReport& report) {
    if (report.code == ErrorCode::InvalidArgument && report.device == "cpu:0") ++reports;
  });
  constexpr int kThreads = 8, kEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        try {
          cpu.allocate(0);
        } catch (const Error&) {
        }
      }
    });
  for (std::thread& thread : threads) thread.join();
  set_error_handler(nullptr);
  EXPECT_EQ(reports.load(), kThreads * kEach);
}

TEST(ErrorHandler, IsReplacedAndRemovedAndItsOwnFailuresAreSwallowed) {
  Device cpu = device("cpu:0");
  int first = 0;
  EXPECT_FALSE(set_error_handler([&](const ErrorReport&) { ++first; }));
  const ErrorHandler previous =
      set_error_handler([](const ErrorReport&) { throw std::runtime_error("handler failed"); });
  ASSERT_TRUE(previous);
  try {
    cpu.allocate(0);
    FAIL() << "allocate(0) succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::InvalidArgument) << "the handler's throw replaced nothing";
  }
  set_error_handler(previous);
  EXPECT_THROW(cpu.allocate(0), Error);
  EXPECT_EQ(first, 1);
  set_error_handler(nullptr);
  EXPECT_THROW(cpu.allocate(0), Error);
  EXPECT_EQ(first, 1) << "removed";
}

}  // namespace
}  // namespace hal
