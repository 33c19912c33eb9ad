// Events on every device: the invalid states (never recorded, timing pending work). Recording,
// waiting, query, synchronize, timing and events of other devices are conformance
// (cts/stream_cases.cpp, event.*).
#include <atomic>
#include <cmath>
#include <string>
#include <thread>

#include "device_suite.hpp"

namespace hal::test {
namespace {

using EventSuite = DeviceTest;

TEST_P(EventSuite, NeverRecordedEventsAreAnInvalidState) {
  Stream stream = device().create_stream();
  Event event = device().create_event();
  expect_error([&] { stream.wait(event); }, ErrorCode::InvalidState, {"never recorded", id()});
  expect_error([&] { event.synchronize(); }, ErrorCode::InvalidState, {"never recorded"});
  expect_error([&] { (void)event.query(); }, ErrorCode::InvalidState, {"never recorded"});
  Event other = stream.record();
  other.synchronize();
  expect_error([&] { Event::elapsed_ms(event, other); }, ErrorCode::InvalidState,
               {"never recorded"});
  // The stream is unaffected.
  stream.record(event);
  stream.synchronize();
  EXPECT_TRUE(event.query());
}

TEST_P(EventSuite, ElapsedTimeOfPendingWorkIsRefused) {
  Stream stream = device().create_stream();
  Gate gate;
  Event start = stream.record();
  stream.host_callback(gate.hold());
  Event end = stream.record();
  expect_error([&] { Event::elapsed_ms(start, end); }, ErrorCode::InvalidState, {"not completed"});
  gate.open();
  end.synchronize();
  EXPECT_GE(Event::elapsed_ms(start, end), 0.0);
}

// Events are thread-safe: timing them while another thread records them again gives a time
// of the two records or InvalidState, never the time of a record not yet reached.
TEST_P(EventSuite, ElapsedTimeWhileAnotherThreadRecordsAgainIsATimeOrRefused) {
  Stream stream = device().create_stream();
  Event start = stream.record();
  Event end = stream.record();
  stream.synchronize();
  std::atomic<bool> recorded{false};
  std::thread recorder([&] {
    for (int i = 0; i < 500; ++i) {
      stream.record(start);
      stream.host_callback([] {});
      stream.record(end);
    }
    stream.synchronize();
    recorded = true;
  });
  int timed = 0;
  std::string wrong;  // the first wrong answer; asserted once the recorder has ended
  for (int i = 0; i < 1'000'000 && !recorded.load() && wrong.empty(); ++i) {
    try {
      const double ms = Event::elapsed_ms(start, end);
      if (!(std::isfinite(ms) && std::abs(ms) < 60'000))
        wrong = std::to_string(ms) + " ms at read " + std::to_string(i);
      ++timed;
    } catch (const Error& error) {
      if (error.code() != ErrorCode::InvalidState) wrong = error.what();
    }
  }
  recorder.join();
  EXPECT_EQ(wrong, "");
  EXPECT_GE(Event::elapsed_ms(start, end), 0.0);
  RecordProperty("timed", timed);
}

HAL_DEVICE_SUITE(EventSuite);

}  // namespace
}  // namespace hal::test
