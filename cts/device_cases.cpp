// device.*: what a device says about itself is present, consistent and findable.
#include <algorithm>
#include <set>

#include "case.hpp"

namespace hal::cts {

void add_device_cases(Cases& cases) {
  cases.push_back({"device.id_is_backend_and_index", [](const Device& d) {
                     const std::string& id = d.id();
                     const size_t colon = id.find(':');
                     check(colon != std::string::npos && colon > 0,
                           "id '" + id + "' has no backend");
                     check(id.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
                               colon + 1 < id.size(),
                           "id '" + id + "' has no index after the colon");
                     check(id.substr(0, colon) == d.info().backend(),
                           "id '" + id + "' does not begin with its backend, " +
                               std::string(d.info().backend()));
                     check(device(id) == d, "hal::device(\"" + id + "\") finds another device");
                   }});
  cases.push_back({"device.listed_among_devices", [](const Device& d) {
                     const auto all = devices();
                     check(std::find(all.begin(), all.end(), d) != all.end(),
                           d.id() + " is not in hal::devices()");
                   }});
  cases.push_back({"device.uuid_is_canonical", [](const Device& d) {
                     const std::string& uuid = d.info().uuid;
                     check(uuid.size() == 36, "uuid '" + uuid + "' is not 36 characters");
                     for (size_t i = 0; i < uuid.size(); ++i) {
                       const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                       const char c = uuid[i];
                       check(dash ? c == '-' : std::isxdigit(static_cast<unsigned char>(c)) != 0,
                             "uuid '" + uuid + "' is not 8-4-4-4-12 hex");
                       check(!std::isupper(static_cast<unsigned char>(c)),
                             "uuid '" + uuid + "' is not lower-case");
                     }
                   }});
  cases.push_back({"device.uuid_finds_the_device", [](const Device& d) {
                     check(device(d.info().uuid) == d, "hal::device(uuid) finds another device");
                   }});
  cases.push_back({"device.uuid_is_unique", [](const Device& d) {
                     for (const Device& other : devices())
                       check(other == d || other.info().uuid != d.info().uuid,
                             d.id() + " and " + other.id() + " share a uuid");
                   }});
  cases.push_back({"device.name_vendor_architecture_set", [](const Device& d) {
                     check(!d.info().name.empty(), "no name");
                     check(!d.info().vendor.empty(), "no vendor");
                     check(!d.info().architecture.empty(), "no architecture");
                   }});
  cases.push_back({"device.memory_total_positive", [](const Device& d) {
                     check(d.info().memory_total.bytes > 0, "memory_total is 0");
                   }});
  cases.push_back({"device.memory_free_within_total", [](const Device& d) {
                     const uint64_t free_bytes = d.memory_free().bytes;
                     check(free_bytes <= d.info().memory_total.bytes,
                           "free memory " + std::to_string(free_bytes) + " exceeds the total " +
                               std::to_string(d.info().memory_total.bytes));
                   }});
  cases.push_back({"device.max_allocation_within_total", [](const Device& d) {
                     const uint64_t max = d.info().limits.max_allocation_bytes;
                     check(max > 0, "limits.max_allocation_bytes is 0");
                     check(max <= d.info().memory_total.bytes,
                           "the largest allocation exceeds the total memory");
                   }});
  cases.push_back({"device.compute_units_positive", [](const Device& d) {
                     check(d.info().compute_units > 0, "compute_units is 0");
                   }});
  cases.push_back({"device.dtypes_include_f32", [](const Device& d) {
                     check(d.info().supports(DType::f32), "f32 is not among the dtypes");
                     const std::set<DType> unique(d.info().dtypes.begin(), d.info().dtypes.end());
                     check(unique.size() == d.info().dtypes.size(), "a dtype is listed twice");
                   }});
  cases.push_back(
      {"device.features_sorted_and_lower_case", [](const Device& d) {
         const auto& features = d.info().features;
         check(std::is_sorted(features.begin(), features.end()), "not sorted");
         check(std::adjacent_find(features.begin(), features.end()) == features.end(),
               "a feature is listed twice");
         for (const std::string& f : features)
           check(std::none_of(f.begin(), f.end(),
                              [](char c) { return std::isupper(static_cast<unsigned char>(c)); }),
                 "feature '" + f + "' is not lower-case");
       }});
  cases.push_back({"device.fp64_feature_matches_dtypes", [](const Device& d) {
                     check(d.info().has_feature(feature::kFp64) == d.info().supports(DType::f64),
                           "the fp64 feature and the f64 dtype disagree");
                   }});
}

}  // namespace hal::cts
