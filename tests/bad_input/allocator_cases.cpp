// Allocators: sizes of 0 and SIZE_MAX, memory kinds and modes that are not hal's, configs with
// NaN or negative figures, and pressure callbacks that throw or remove themselves.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "case_helpers.hpp"

namespace hal::test::bad_input {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// `change` applied to the device allocator's current config, then configured.
template <class Change>
void configure_with(const Device& device, Change change) {
  AllocatorConfig config = device.allocator().config();
  change(config);
  device.allocator().configure(config);
}

// A limit of 64 MiB with the thresholds at 1/8 and 1/4 of it, and one allocation of 20 MiB (a
// segment of its own) crossing both: pressure callbacks run on this thread before it returns.
Buffer cross_both_pressure_thresholds(const Device& device) {
  configure_with(device, [](AllocatorConfig& config) {
    config.limit_bytes = 64u << 20;
    config.warning_fraction = 0.125;
    config.critical_fraction = 0.25;
  });
  return device.allocate(20u << 20);
}

}  // namespace

Area allocator_cases() {
  using enum ErrorCode;
  return {
      "allocator",
      {
          {"allocate_0_bytes", [](const Device& d, Stream&) { d.allocate(0); }, InvalidArgument,
           "0 bytes"},
          {"allocate_size_max_bytes", [](const Device& d, Stream&) { d.allocate(kSizeMax); },
           OutOfMemory, "allocate"},
          {"allocate_2_pow_62_bytes_directly",
           [](const Device& d, Stream&) {
             d.allocate(size_t{1} << 62, MemoryKind::device, AllocationMode::direct);
           },
           OutOfMemory, "allocate"},
          {"allocate_of_memory_kind_77",
           [](const Device& d, Stream&) { d.allocate(64, static_cast<MemoryKind>(77)); },
           InvalidArgument, "77"},
          {"allocator_of_memory_kind_77",
           [](const Device& d, Stream&) { d.allocator(static_cast<MemoryKind>(77)); },
           InvalidArgument, "77"},
          {"allocate_in_allocation_mode_9",
           [](const Device& d, Stream&) {
             d.allocate(64, MemoryKind::device, static_cast<AllocationMode>(9));
           },
           InvalidArgument, "allocation mode 9"},
          {"allocate_past_the_allocators_limit",
           [](const Device& d, Stream&) {
             d.allocator().set_limit(1u << 20);
             d.allocate(2u << 20);
           },
           OutOfMemory, "limit"},
          {"configure_a_nan_growth_factor",
           [](const Device& d, Stream&) {
             configure_with(d, [](AllocatorConfig& c) { c.growth_factor = kNan; });
           },
           InvalidArgument, "growth factor"},
          {"configure_a_negative_warning_fraction",
           [](const Device& d, Stream&) {
             configure_with(d, [](AllocatorConfig& c) { c.warning_fraction = -0.5; });
           },
           InvalidArgument, "pressure thresholds"},
          {"configure_a_nan_critical_fraction",
           [](const Device& d, Stream&) {
             configure_with(d, [](AllocatorConfig& c) { c.critical_fraction = kNan; });
           },
           InvalidArgument, "pressure thresholds"},
          {"configure_a_warning_above_the_critical_fraction",
           [](const Device& d, Stream&) {
             configure_with(d, [](AllocatorConfig& c) {
               c.warning_fraction = 0.99;
               c.critical_fraction = 0.5;
             });
           },
           InvalidArgument, "warning <= critical"},
          {"configure_a_max_segment_of_0_bytes",
           [](const Device& d, Stream&) {
             configure_with(d, [](AllocatorConfig& c) { c.max_segment_bytes = 0; });
           },
           InvalidArgument, "below 2 MiB"},
          {"initial_reserve_of_2_pow_62_bytes_is_dropped",
           [](const Device& d, Stream&) {
             configure_with(d,
                            [](AllocatorConfig& c) { c.initial_reserve_bytes = size_t{1} << 62; });
             // The large pool's first segment (small requests skip it): a reserve past what
             // the device gives is dropped, and the request made at its own size.
             require(d.allocate(4u << 20).size() == 4u << 20, "the allocation is made");
           },
           Ok, ""},
          {"limit_fraction_nan",
           [](const Device& d, Stream&) { d.allocator().set_limit_fraction(kNan); },
           InvalidArgument, "limit fraction"},
          {"limit_fraction_negative",
           [](const Device& d, Stream&) { d.allocator().set_limit_fraction(-0.25); },
           InvalidArgument, "limit fraction"},
          {"limit_fraction_infinite",
           [](const Device& d, Stream&) { d.allocator().set_limit_fraction(kInf); },
           InvalidArgument, "limit fraction"},
          {"limit_fraction_0",
           [](const Device& d, Stream&) { d.allocator().set_limit_fraction(0.0); }, InvalidArgument,
           "limit fraction"},
          {"pressure_callback_that_is_empty",
           [](const Device& d, Stream&) { d.allocator().add_pressure_callback({}); },
           InvalidArgument, "callback is empty"},
          {"remove_a_pressure_callback_never_added",
           [](const Device& d, Stream&) { d.allocator().remove_pressure_callback(~uint64_t{0}); },
           NotFound, "no memory pressure callback"},
          {"pressure_callback_that_throws",
           [](const Device& d, Stream&) {
             int calls = 0;
             d.allocator().add_pressure_callback([&](const MemoryPressureEvent&) {
               ++calls;
               throw std::runtime_error("thrown by the callback");
             });
             const Buffer held = cross_both_pressure_thresholds(d);
             require(calls >= 1 && held.size() == 20u << 20, "the allocation stands");
           },
           Ok, ""},
          {"pressure_callback_that_removes_itself",
           [](const Device& d, Stream&) {
             int calls = 0;
             uint64_t id = 0;
             id = d.allocator().add_pressure_callback([&](const MemoryPressureEvent&) {
               ++calls;
               d.allocator().remove_pressure_callback(id);
             });
             const Buffer held = cross_both_pressure_thresholds(d);
             require(calls == 1,
                     "called once, then removed (called " + std::to_string(calls) + ")");
           },
           Ok, ""},
          {"pressure_callback_that_allocates_past_the_limit",
           [](const Device& d, Stream&) {
             d.allocator().add_pressure_callback([&](const MemoryPressureEvent&) {
               d.allocate(
                   64u
                   << 20);  // past the limit: its OutOfMemory is the callback's to catch: logged
             });
             const Buffer held = cross_both_pressure_thresholds(d);
           },
           Ok, ""},
          {"memory_scope_of_an_empty_device",
           [](const Device&, Stream&) { MemoryScope scope{Device()}; }, InvalidArgument,
           "default-constructed"},
          {"record_stream_of_an_empty_buffer",
           [](const Device&, Stream& s) { record_stream(Buffer(), s); }, InvalidArgument, "empty"},
      }};
}

}  // namespace hal::test::bad_input
