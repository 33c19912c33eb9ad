// stream.* and event.*: in-order, asynchronous streams; events that order work across streams
// and time it; failures that surface at synchronize; lifetimes.
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "case.hpp"

namespace hal::cts {
namespace {

// Holds a stream at a host callback until opened (or destroyed).
class Gate {
 public:
  Gate() : opened_(promise_.get_future().share()) {}
  ~Gate() { open(); }
  std::function<void()> hold() const {
    return [opened = opened_] { opened.wait(); };
  }
  void open() {
    std::call_once(once_, [this] { promise_.set_value(); });
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_;
  std::once_flag once_;
};

uint32_t read_u32(Stream& stream, const Buffer& buffer) {
  uint32_t value = 0;
  stream.copy_to_host(&value, buffer, sizeof value);
  stream.synchronize();
  return value;
}

}  // namespace

void add_stream_cases(Cases& cases) {
  cases.push_back({"stream.belongs_to_its_device", [](const Device& d) {
                     Stream stream = d.create_stream();
                     check(stream.device() == d, "the stream is on another device");
                     check(stream.query(), "a new stream is not idle");
                     stream.synchronize();
                   }});
  cases.push_back({"stream.work_runs_in_order", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Buffer buffer = d.allocate(4);
                     // Each copy reads its source when it runs, so the sources outlive them.
                     static const uint32_t values[] = {1, 2, 3};
                     for (const uint32_t& value : values) stream.copy_from_host(buffer, &value, 4);
                     check(read_u32(stream, buffer) == 3, "the last copy did not win");
                   }});
  cases.push_back({"stream.host_callbacks_run_in_order", [](const Device& d) {
                     Stream stream = d.create_stream();
                     std::vector<int> order;
                     std::mutex mutex;
                     for (int i = 0; i < 1000; ++i)
                       stream.host_callback([&, i] {
                         std::lock_guard lock(mutex);
                         order.push_back(i);
                       });
                     stream.synchronize();
                     std::vector<int> want(1000);
                     for (int i = 0; i < 1000; ++i) want[i] = i;
                     check(order == want, "callbacks ran out of order");
                   }});
  cases.push_back({"stream.enqueue_returns_before_the_work_runs", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Gate gate;
                     Buffer buffer = d.allocate(4);
                     const uint32_t value = 42;
                     uint32_t out = 0;
                     stream.host_callback(gate.hold());
                     stream.copy_from_host(buffer, &value, 4);
                     stream.copy_to_host(&out, buffer, 4);
                     check(!stream.query(), "a blocked stream says it is idle");
                     check(out == 0, "work ran past a blocked callback");
                     gate.open();
                     stream.synchronize();
                     check(out == 42, "the copies did not run after the gate opened");
                     check(stream.query(), "a synchronized stream is not idle");
                   }});
  cases.push_back({"stream.independent_streams_do_not_wait", [](const Device& d) {
                     Stream blocked = d.create_stream(), free_stream = d.create_stream();
                     Gate gate;
                     blocked.host_callback(gate.hold());
                     std::atomic<bool> ran{false};
                     free_stream.host_callback([&ran] { ran = true; });
                     free_stream.synchronize();
                     check(ran.load(), "the free stream waited for the blocked one");
                     check(!blocked.query(), "a blocked stream says it is idle");
                     gate.open();
                     blocked.synchronize();
                   }});
  cases.push_back({"stream.failure_surfaces_at_synchronize_once", [](const Device& d) {
                     Stream stream = d.create_stream();
                     std::atomic<bool> later_ran{false};
                     stream.host_callback([] { throw std::runtime_error("cts: deliberate"); });
                     stream.host_callback([&later_ran] { later_ran = true; });
                     check_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
                                 {d.id(), "deliberate"}, "synchronize after a failing callback");
                     check(later_ran.load(), "the work after the failure did not run");
                     stream.synchronize();  // reported once; the stream works on
                     Buffer buffer = d.allocate(4);
                     const uint32_t value = 5;
                     stream.copy_from_host(buffer, &value, 4);
                     check(read_u32(stream, buffer) == 5, "the stream failed to copy afterwards");
                   }});
  cases.push_back(
      {"stream.destroying_finishes_pending_work", [](const Device& d) {
         Buffer buffer = d.allocate(256);
         std::vector<unsigned char> out(256, 0);
         {
           Stream stream = d.create_stream();
           stream.host_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
           stream.fill(buffer, uint8_t{6}, 256);
           stream.copy_to_host(out.data(), buffer, 256);
         }
         check(out == std::vector<unsigned char>(256, 6), "work was dropped with its stream");
       }});
  cases.push_back({"stream.buffers_live_until_their_work_is_done", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Gate gate;
                     std::vector<unsigned char> out(1024, 0);
                     stream.host_callback(gate.hold());
                     {
                       Buffer buffer = d.allocate(1024);
                       stream.fill(buffer, uint8_t{8}, 1024);
                       stream.copy_to_host(out.data(), buffer, 1024);
                     }  // the handle is gone; the work holds the memory
                     Buffer other = d.allocate(1024);
                     stream.fill(other, uint8_t{1}, 1024);
                     gate.open();
                     stream.synchronize();
                     check(out == std::vector<unsigned char>(1024, 8),
                           "a buffer was reused while work still used it");
                   }});
  cases.push_back({"stream.sixteen_streams_at_once", [](const Device& d) {
                     std::vector<Stream> streams;
                     std::vector<Buffer> buffers;
                     for (uint32_t i = 0; i < 16; ++i) {
                       streams.push_back(d.create_stream());
                       buffers.push_back(d.allocate(4));
                       streams.back().fill(buffers.back(), i * 3, 1);
                     }
                     for (uint32_t i = 0; i < 16; ++i)
                       check(read_u32(streams[i], buffers[i]) == i * 3,
                             "stream " + std::to_string(i));
                   }});
  cases.push_back({"event.record_then_synchronize", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Event event = stream.record();
                     event.synchronize();
                     check(event.query(), "a synchronized event is not complete");
                     check(event.device() == d, "the event is on another device");
                   }});
  cases.push_back({"event.synchronize_waits_for_the_recorded_work", [](const Device& d) {
                     Stream stream = d.create_stream();
                     std::atomic<bool> done{false};
                     stream.host_callback([&done] {
                       std::this_thread::sleep_for(std::chrono::milliseconds(10));
                       done = true;
                     });
                     Event event = d.create_event();
                     check(!event.recorded(), "a new event says it was recorded");
                     stream.record(event);
                     check(event.recorded(), "a recorded event says it was not");
                     event.synchronize();
                     check(done.load(), "synchronize returned before the work was done");
                     check(event.query(), "a synchronized event is not complete");
                   }});
  cases.push_back({"event.recording_again_leaves_earlier_waits_in_place", [](const Device& d) {
                     Stream first = d.create_stream(), second = d.create_stream();
                     Event event = first.record();
                     event.synchronize();
                     Gate gate;
                     second.wait(event);  // the completed record: does not block
                     first.host_callback(gate.hold());
                     first.record(event);  // now pending
                     std::atomic<bool> ran{false};
                     second.host_callback([&ran] { ran = true; });
                     second.synchronize();
                     check(ran.load(), "an earlier wait moved with the event's new record");
                     check(!event.query(), "the event recorded again is complete too early");
                     gate.open();
                     event.synchronize();
                   }});
  cases.push_back({"event.query_follows_the_work", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Gate gate;
                     stream.host_callback(gate.hold());
                     Event event = stream.record();
                     check(!event.query(), "an event behind blocked work is complete");
                     gate.open();
                     event.synchronize();
                     check(event.query(), "the event did not complete");
                   }});
  cases.push_back({"event.orders_work_across_streams", [](const Device& d) {
                     Stream producer = d.create_stream(), consumer = d.create_stream();
                     Gate gate;
                     Buffer buffer = d.allocate(4);
                     producer.fill(buffer, 0u, 1);
                     producer.host_callback(gate.hold());
                     producer.fill(buffer, 77u, 1);
                     Event written = producer.record();
                     consumer.wait(written);
                     uint32_t out = 0;
                     consumer.copy_to_host(&out, buffer, 4);
                     check(!written.query(), "an event behind blocked work is complete");
                     check(!consumer.query(), "a stream waiting on blocked work is idle");
                     gate.open();
                     consumer.synchronize();
                     check(out == 77, "the consumer read before the producer wrote");
                     check(written.query(), "the event waited on did not complete");
                   }});
  cases.push_back({"event.elapsed_time_is_measured", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Event start = stream.record();
                     stream.host_callback(
                         [] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); });
                     Event end = stream.record();
                     end.synchronize();
                     const double ms = Event::elapsed_ms(start, end);
                     check(ms >= 10.0 - 1e-3, "10 ms of work measured as " + std::to_string(ms));
                     check(Event::elapsed_ms(start, start) >= 0.0, "an event to itself");
                   }});
  cases.push_back({"event.never_recorded_is_an_invalid_state", [](const Device& d) {
                     Event never = d.create_event();
                     Stream stream = d.create_stream();
                     Event done = stream.record();
                     done.synchronize();
                     check_error([&] { Event::elapsed_ms(never, done); }, ErrorCode::InvalidState,
                                 {}, "elapsed time from an event never recorded");
                   }});
  cases.push_back({"event.of_another_device_is_refused", [](const Device& d) {
                     for (const Device& other : devices()) {
                       if (other == d) continue;
                       Event foreign = other.create_event();
                       Stream stream = d.create_stream();
                       check_error([&] { stream.record(foreign); }, ErrorCode::InvalidArgument,
                                   {d.id(), other.id()}, "recording an event of " + other.id());
                       return;
                     }
                     throw NotSupported("no other device to take an event from");
                   }});
  cases.push_back({"event.waits_across_backends", [](const Device& d) {
                     if (d.id() == "cpu:0") throw NotSupported("cpu:0 is the other backend");
                     Device cpu = device("cpu:0");
                     Stream here = d.create_stream(), there = cpu.create_stream();
                     Gate gate;
                     std::atomic<bool> first{false};
                     there.host_callback(gate.hold());
                     there.host_callback([&first] { first = true; });
                     here.wait(there.record());
                     std::atomic<bool> second_saw_first{false};
                     here.host_callback([&] { second_saw_first = first.load(); });
                     gate.open();
                     here.synchronize();
                     check(second_saw_first.load(), "the wait on cpu:0's event did not hold");
                   }});
}

}  // namespace hal::cts
