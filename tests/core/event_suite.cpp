// Events on every device: the invalid states (never recorded, timing pending work) and the
// failure of the work before a record. Recording, waiting, query, synchronize, timing and events
// of other devices are conformance (cts/stream_cases.cpp, event.*).
#include <atomic>
#include <cmath>
#include <stdexcept>
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

// As CUDA's events: a record after work that failed reports the failure on every wait and
// timing, until the event is recorded again; query, as the stream's, says only that the work
// has completed. The stream reports it too, once, and a record made after that report is clean.
TEST_P(EventSuite, ARecordAfterFailedWorkReportsTheFailure) {
  Stream stream = device().create_stream();
  const Event before = stream.record();
  stream.host_callback([] { throw std::runtime_error("event suite: deliberate"); });
  Event after = stream.record();
  const std::vector<std::string> failure{id(), "before its record failed", "deliberate"};
  expect_error([&] { after.synchronize(); }, ErrorCode::AsyncFailure, failure);
  expect_error([&] { after.synchronize(); }, ErrorCode::AsyncFailure, failure);  // sticky
  expect_error([&] { Event::elapsed_ms(before, after); }, ErrorCode::AsyncFailure, failure);
  EXPECT_TRUE(after.query());
  before.synchronize();  // the work before it did not fail
  // A stream that waits for the event goes on after it, as the failing stream itself does.
  Stream waiter = device().create_stream();
  waiter.wait(after);
  waiter.synchronize();
  // The event did not take the stream's report: the stream reports the failure once.
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure, {id(), "deliberate"});
  stream.synchronize();
  const Event clean = stream.record();
  clean.synchronize();
  EXPECT_TRUE(clean.query());
  expect_error([&] { after.synchronize(); }, ErrorCode::AsyncFailure, failure);  // kept
  stream.record(after);  // moved past the failure, which the stream has reported
  after.synchronize();
  EXPECT_TRUE(after.query());
}

// A failure after the record is not the record's.
TEST_P(EventSuite, AFailureAfterARecordIsNotItsFailure) {
  Stream stream = device().create_stream();
  Gate gate;
  stream.host_callback(gate.hold());
  const Event event = stream.record();
  stream.host_callback([] { throw std::runtime_error("event suite: after the record"); });
  gate.open();
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure, {"after the record"});
  event.synchronize();
  EXPECT_TRUE(event.query());
}

HAL_DEVICE_SUITE(EventSuite);

}  // namespace
}  // namespace hal::test
