// Copies and fills: offsets and sizes past the end (and past SIZE_MAX when added), null host
// pointers, overlapping ranges, and buffers, events and tensors of other devices.
#include <array>

#include "case_helpers.hpp"

namespace hal::test::bad_input {

Area copy_cases() {
  using enum ErrorCode;
  return {"copies",
          {
              {"copy_from_host_past_the_end",
               [](const Device& d, Stream& s) {
                 std::array<char, 16> host{};
                 s.copy_from_host(d.allocate(64), host.data(), 16, 56);
               },
               OutOfRange, "run past the end"},
              {"copy_from_host_at_offset_size_max",
               [](const Device& d, Stream& s) {
                 std::array<char, 16> host{};
                 s.copy_from_host(d.allocate(64), host.data(), 16, kSizeMax);
               },
               OutOfRange, "run past the end"},
              {"copy_to_host_of_size_max_bytes",
               [](const Device& d, Stream& s) {
                 std::array<char, 16> host{};
                 s.copy_to_host(host.data(), d.allocate(64), kSizeMax, 1);
               },
               OutOfRange, "run past the end"},
              {"copy_from_a_null_host_pointer",
               [](const Device& d, Stream& s) { s.copy_from_host(d.allocate(64), nullptr, 8); },
               InvalidArgument, "null"},
              {"copy_to_a_null_host_pointer",
               [](const Device& d, Stream& s) { s.copy_to_host(nullptr, d.allocate(64), 8); },
               InvalidArgument, "null"},
              {"copy_of_an_empty_buffer",
               [](const Device& d, Stream& s) { s.copy(d.allocate(64), Buffer(), 8); },
               InvalidArgument, "empty"},
              {"copy_within_a_buffer_whose_ranges_overlap",
               [](const Device& d, Stream& s) {
                 const Buffer buffer = d.allocate(64);
                 std::array<unsigned char, 64> bytes{};
                 for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i);
                 s.copy_from_host(buffer, bytes.data(), bytes.size());
                 s.copy(buffer, buffer, 32, 16, 0);
                 s.copy_to_host(bytes.data(), buffer, bytes.size());
                 s.synchronize();
                 for (size_t i = 0; i < 32; ++i)
                   require(bytes[16 + i] == i, "as memmove: byte " + std::to_string(16 + i) +
                                                   " is " + std::to_string(bytes[16 + i]) +
                                                   ", not " + std::to_string(i));
               },
               Ok, ""},
              with_another_device({"copy_between_devices_past_the_destinations_end",
                                   [](const Device& d, Stream& s) {
                                     s.copy(another_device(d).allocate(64), d.allocate(64), 32, 48,
                                            0);
                                   },
                                   OutOfRange, "destination"}),
              with_another_device({"copy_between_devices_past_the_sources_end",
                                   [](const Device& d, Stream& s) {
                                     s.copy(d.allocate(64), another_device(d).allocate(64), 32, 0,
                                            kSizeMax - 8);
                                   },
                                   OutOfRange, "source"}),
              with_another_device({"copy_of_0_bytes_at_the_end",
                                   [](const Device& d, Stream& s) {
                                     const Buffer buffer = d.allocate(64);
                                     s.copy(buffer, another_device(d).allocate(64), 0, 64, 64);
                                   },
                                   Ok, ""}),
              {"copy_of_0_bytes_past_the_end",
               [](const Device& d, Stream& s) { s.copy(d.allocate(64), d.allocate(64), 0, 65, 0); },
               OutOfRange, "run past the end"},
              {"fill_with_a_3_byte_pattern",
               [](const Device& d, Stream& s) {
                 const char pattern[3] = {1, 2, 3};
                 s.fill(d.allocate(64), pattern, 3, 63);
               },
               InvalidArgument, "pattern of 3 bytes"},
              {"fill_of_bytes_not_a_multiple_of_the_pattern",
               [](const Device& d, Stream& s) {
                 const uint32_t pattern = 7;
                 s.fill(d.allocate(64), &pattern, 4, 10);
               },
               InvalidArgument, "not a multiple"},
              {"fill_from_a_null_pattern",
               [](const Device& d, Stream& s) { s.fill(d.allocate(64), nullptr, 4, 8); },
               InvalidArgument, "null"},
              {"fill_past_the_end",
               [](const Device& d, Stream& s) { s.fill(d.allocate(64), uint32_t{7}, 4, 15); },
               OutOfRange, "run past the end"},
              with_another_device({"fill_of_a_buffer_of_another_device",
                                   [](const Device& d, Stream& s) {
                                     s.fill(another_device(d).allocate(64), uint32_t{7}, 4);
                                   },
                                   InvalidArgument, "belongs to"}),
              {"copy_on_an_empty_stream",
               [](const Device& d, Stream&) {
                 const Buffer buffer = d.allocate(64);
                 Stream().copy(buffer, buffer, 8, 8, 0);
               },
               InvalidArgument, "empty (default-constructed) Stream"},
              {"host_callback_of_an_empty_function",
               [](const Device&, Stream& s) { s.host_callback({}); }, InvalidArgument,
               "empty function"},
              with_another_device(
                  {"record_of_an_event_of_another_device",
                   [](const Device& d, Stream& s) { s.record(another_device(d).create_event()); },
                   InvalidArgument, "belongs to"}),
              {"wait_for_an_event_never_recorded",
               [](const Device& d, Stream& s) { s.wait(d.create_event()); }, InvalidState,
               "never recorded"},
              with_another_device({"strided_tensor_to_another_device_on_that_devices_stream",
                                   [](const Device& d, Stream& s) {
                                     const Tensor t = zeros({2, 3}, DType::f32, s).transpose(0, 1);
                                     s.synchronize();
                                     const Device there = another_device(d);
                                     Stream elsewhere = there.create_stream();
                                     t.to(there, elsewhere);
                                   },
                                   InvalidArgument, "stream"}),
          }};
}

}  // namespace hal::test::bad_input
