// copy.*: copies host to device, device to host and device to device at sizes from 1 byte up
// and at odd offsets; copies to and from another backend; fills; refusals.
#include "case.hpp"

namespace hal::cts {
namespace {

enum class Direction { to_device, to_host, on_device };
const char* name_of(Direction direction) {
  switch (direction) {
    case Direction::to_device:
      return "host_to_device";
    case Direction::to_host:
      return "device_to_host";
    default:
      return "device_to_device";
  }
}

// Copies `bytes` at `offset` in the given direction and checks every byte of the destination,
// including those around the copied range.
void copy_case(const Device& d, Direction direction, size_t bytes, size_t offset) {
  const size_t total = bytes + 2 * offset + 16;
  Stream stream = d.create_stream();
  Buffer source = d.allocate(total), target = d.allocate(total);
  const auto data = pattern(total, 3);
  std::vector<unsigned char> want(total, 0xee), got(total, 0);
  stream.fill(target, uint8_t{0xee}, total);
  switch (direction) {
    case Direction::to_device:
      stream.copy_from_host(target, data.data() + offset, bytes, offset);
      std::copy(data.begin() + static_cast<std::ptrdiff_t>(offset),
                data.begin() + static_cast<std::ptrdiff_t>(offset + bytes),
                want.begin() + static_cast<std::ptrdiff_t>(offset));
      stream.copy_to_host(got.data(), target, total);
      break;
    case Direction::to_host:
      stream.copy_from_host(source, data.data(), total);
      got.assign(total, 0xee);
      stream.copy_to_host(got.data() + offset, source, bytes, offset);
      std::copy(data.begin() + static_cast<std::ptrdiff_t>(offset),
                data.begin() + static_cast<std::ptrdiff_t>(offset + bytes),
                want.begin() + static_cast<std::ptrdiff_t>(offset));
      break;
    case Direction::on_device:
      stream.copy_from_host(source, data.data(), total);
      stream.copy(target, source, bytes, offset + 1, offset);
      std::copy(data.begin() + static_cast<std::ptrdiff_t>(offset),
                data.begin() + static_cast<std::ptrdiff_t>(offset + bytes),
                want.begin() + static_cast<std::ptrdiff_t>(offset + 1));
      stream.copy_to_host(got.data(), target, total);
      break;
  }
  stream.synchronize();
  for (size_t i = 0; i < total; ++i)
    check(got[i] == want[i], "byte " + std::to_string(i) + " is " + std::to_string(got[i]) +
                                 ", expected " + std::to_string(want[i]));
}

}  // namespace

void add_copy_cases(Cases& cases) {
  for (Direction direction : {Direction::to_device, Direction::to_host, Direction::on_device})
    for (size_t bytes : {size_t{1}, size_t{7}, size_t{4096}, (size_t{1} << 20) + 3})
      for (size_t offset : {size_t{0}, size_t{13}})
        cases.push_back({"copy." + std::string(name_of(direction)) + "." + std::to_string(bytes) +
                             "_bytes_at_" + std::to_string(offset),
                         [=](const Device& d) { copy_case(d, direction, bytes, offset); }});
  for (bool to_cpu : {true, false})
    cases.push_back({std::string("copy.") + (to_cpu ? "to" : "from") + "_cpu_device",
                     [to_cpu](const Device& d) {
                       if (d.id() == "cpu:0") throw NotSupported("the device is cpu:0");
                       Device cpu = device("cpu:0");
                       Stream stream = d.create_stream();
                       const auto data = pattern(65536, 9);
                       Buffer here = d.allocate(65536), there = cpu.allocate(65536);
                       std::vector<unsigned char> got(65536, 0);
                       if (to_cpu) {
                         stream.copy_from_host(here, data.data(), data.size());
                         stream.copy(there, here, data.size());
                         stream.copy_to_host(got.data(), there, got.size());
                       } else {
                         stream.copy_from_host(there, data.data(), data.size());
                         stream.copy(here, there, data.size());
                         stream.copy_to_host(got.data(), here, got.size());
                       }
                       stream.synchronize();
                       check(got == data, "the bytes differ after the copy between backends");
                     }});
  cases.push_back({"copy.between_devices_of_the_backend", [](const Device& d) {
                     const std::string backend = d.id().substr(0, d.id().find(':'));
                     for (const Device& other : devices()) {
                       if (other == d || other.id().rfind(backend + ":", 0) != 0) continue;
                       Stream stream = d.create_stream();
                       const auto data = pattern(4096, 1);
                       Buffer here = d.allocate(4096), there = other.allocate(4096);
                       std::vector<unsigned char> got(4096, 0);
                       stream.copy_from_host(here, data.data(), data.size());
                       stream.copy(there, here, data.size());
                       stream.copy_to_host(got.data(), there, got.size());
                       stream.synchronize();
                       check(got == data, "the bytes differ after a copy to " + other.id());
                       return;
                     }
                     throw NotSupported("no other device of backend " + backend);
                   }});
  for (size_t size : {size_t{1}, size_t{2}, size_t{4}, size_t{8}, size_t{16}})
    cases.push_back(
        {"copy.fill_with_a_" + std::to_string(size) + "_byte_pattern", [size](const Device& d) {
           Stream stream = d.create_stream();
           Buffer buffer = d.allocate(2048);
           const unsigned char value[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
           stream.fill(buffer, uint8_t{0}, 2048);
           stream.fill(buffer, value, size, 64 * size, 16 * size);
           std::vector<unsigned char> got(2048);
           stream.copy_to_host(got.data(), buffer, got.size());
           stream.synchronize();
           for (size_t i = 0; i < 2048; ++i) {
             const bool inside = i >= 16 * size && i < 80 * size;
             const unsigned char want = inside ? value[(i - 16 * size) % size] : 0;
             check(got[i] == want, "byte " + std::to_string(i));
           }
         }});
  cases.push_back({"copy.fill_with_a_float", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Buffer buffer = d.allocate(256);
                     stream.fill(buffer, 2.5f, 64);
                     std::vector<float> got(64);
                     stream.copy_to_host(got.data(), buffer, 256);
                     stream.synchronize();
                     check(got == std::vector<float>(64, 2.5f), "the floats read back differ");
                   }});
  // Overlapping ranges of one buffer copy as memmove does.
  cases.push_back({"copy.within_one_buffer_may_overlap", [](const Device& d) {
                     std::vector<uint32_t> values(64);
                     for (uint32_t i = 0; i < 64; ++i) values[i] = i;
                     Stream stream = d.create_stream();
                     Buffer buffer = d.allocate(values.size() * 4);
                     stream.copy_from_host(buffer, values.data(), values.size() * 4);
                     stream.copy(buffer, buffer, 32 * 4, /*dst_offset=*/8 * 4, /*src_offset=*/0);
                     std::vector<uint32_t> out(64);
                     stream.copy_to_host(out.data(), buffer, out.size() * 4);
                     stream.synchronize();
                     for (uint32_t i = 0; i < 64; ++i)
                       check(out[i] == ((i >= 8 && i < 40) ? i - 8 : i),
                             "element " + std::to_string(i) + " is " + std::to_string(out[i]));
                   }});
  cases.push_back({"copy.past_the_end_is_out_of_range", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Buffer buffer = d.allocate(100);
                     std::vector<unsigned char> host(200);
                     check_error([&] { stream.copy_from_host(buffer, host.data(), 101); },
                                 ErrorCode::OutOfRange, {}, "copying 101 bytes into 100");
                     check_error([&] { stream.copy_to_host(host.data(), buffer, 50, 60); },
                                 ErrorCode::OutOfRange, {}, "reading 50 bytes at offset 60 of 100");
                     stream.synchronize();
                   }});
  cases.push_back({"copy.zero_bytes_is_a_no_op", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Buffer buffer = d.allocate(16);
                     unsigned char host[16] = {};
                     stream.copy_from_host(buffer, host, 0);
                     stream.copy_to_host(host, buffer, 0);
                     // Nothing to copy: no pointer is read, an offset at the end is in range.
                     stream.copy_from_host(buffer, nullptr, 0);
                     stream.copy_to_host(nullptr, buffer, 0, 16);
                     stream.copy(buffer, buffer, 0);
                     stream.synchronize();
                     check(stream.query(), "a synchronized stream is not idle");
                   }});
}

}  // namespace hal::cts
