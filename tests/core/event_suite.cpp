// Events on every device: record, wait from another stream, query, synchronize, timing.
#include <thread>

#include "device_suite.hpp"

namespace hal::test {
namespace {

using EventSuite = DeviceTest;

TEST_P(EventSuite, OrdersWorkAcrossStreams) {
  Stream producer = device().create_stream();
  Stream consumer = device().create_stream();
  Gate gate;
  Buffer buffer = device().allocate(4);
  const uint32_t value = 1234;
  uint32_t out = 0;

  producer.host_callback(gate.hold());
  producer.copy_from_host(buffer, &value, 4);
  Event written = producer.record();
  consumer.wait(written);
  consumer.copy_to_host(&out, buffer, 4);

  EXPECT_FALSE(written.query());
  EXPECT_FALSE(consumer.query());
  gate.open();
  consumer.synchronize();
  EXPECT_EQ(out, 1234u);
  EXPECT_TRUE(written.query());
}

TEST_P(EventSuite, SynchronizeBlocksUntilTheRecordedWorkIsDone) {
  Stream stream = device().create_stream();
  std::atomic<bool> done{false};
  stream.host_callback([&done] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    done = true;
  });
  Event event = device().create_event();
  EXPECT_FALSE(event.recorded());
  stream.record(event);
  EXPECT_TRUE(event.recorded());
  event.synchronize();
  EXPECT_TRUE(done.load());
  EXPECT_TRUE(event.query());
}

TEST_P(EventSuite, RecordingAgainMovesTheEventButEarlierWaitsKeepTheirPoint) {
  Stream first = device().create_stream();
  Stream second = device().create_stream();
  Event event = first.record();
  event.synchronize();
  Gate gate;
  second.wait(event);  // the completed record: does not block
  first.host_callback(gate.hold());
  first.record(event);  // now pending
  bool ran = false;
  second.host_callback([&ran] { ran = true; });
  second.synchronize();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(event.query());
  gate.open();
  event.synchronize();
}

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

TEST_P(EventSuite, ElapsedTimeCoversTheWorkBetweenRecords) {
  Stream stream = device().create_stream();
  Event start = stream.record();
  stream.host_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  Event end = stream.record();
  end.synchronize();
  const double elapsed = Event::elapsed_ms(start, end);
  EXPECT_GE(elapsed, 20.0 - 1e-3);  // sleep_for waits at least as long as asked
  EXPECT_GE(Event::elapsed_ms(start, start), 0.0);
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

TEST_P(EventSuite, EventsOfAnotherDeviceCannotBeRecordedHere) {
  for (const Device& other : devices()) {
    if (other == device()) continue;
    Stream stream = device().create_stream();
    Event foreign = other.create_event();
    expect_error([&] { stream.record(foreign); }, ErrorCode::InvalidArgument, {id(), other.id()});
    return;
  }
  GTEST_SKIP() << "only one device is visible";
}

HAL_DEVICE_SUITE(EventSuite);

}  // namespace
}  // namespace hal::test
