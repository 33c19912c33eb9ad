// Events on every device: the invalid states (never recorded, timing pending work). Recording,
// waiting, query, synchronize, timing and events of other devices are conformance
// (cts/stream_cases.cpp, event.*).
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

HAL_DEVICE_SUITE(EventSuite);

}  // namespace
}  // namespace hal::test
