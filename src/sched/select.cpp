// rank_devices / select_device: requirements first, then preference, predicted time and kind.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/text.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "hal/select.hpp"
#include "hal/units.hpp"
#include "sched/calibration_store.hpp"

namespace hal {
namespace {

constexpr size_t kUnlisted = static_cast<size_t>(-1);

// Position of the device's vendor among the preferred ones (lower case); kUnlisted when absent.
size_t vendor_rank(const std::vector<std::string>& preferred, const std::string& vendor) {
  if (preferred.empty()) return 0;
  const std::string name = detail::to_lower(vendor);
  for (size_t i = 0; i < preferred.size(); ++i) {
    const std::string& wanted = preferred[i];
    if (name.find(wanted) != std::string::npos) return i;
    if (wanted == "amd" && name.find("advanced micro devices") != std::string::npos) return i;
  }
  return kUnlisted;
}

// Documented order when time does not decide: discrete GPU, integrated GPU, accelerator, CPU.
int kind_priority(const DeviceInfo& info) {
  switch (info.kind) {
    case DeviceKind::gpu:
      return info.has_feature(feature::kUnifiedMemory) ? 1 : 0;
    case DeviceKind::accelerator:
      return 2;
    case DeviceKind::cpu:
      return 3;
  }
  return 4;
}

const char* kind_words(int priority) {
  static constexpr const char* kWords[] = {"discrete GPU", "integrated GPU", "accelerator", "CPU",
                                           "device"};
  return kWords[std::clamp(priority, 0, 4)];
}

struct Ranked {
  Candidate candidate;
  size_t vendor = 0;
  int priority = 0;
  size_t order = 0;
  // Figures the estimate lacked (Estimate::unknown): its time counts none of them, a lower
  // bound that ranks after complete estimates.
  std::vector<std::string> unknown;
};

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

// Why the calibration of `info` has no figure in `dtype`, and what would give one.
std::string unmeasured_because(const Calibration& calibration, const DeviceInfo& info,
                               DType dtype) {
  if (!info.supports(dtype)) return info.id + " has no " + std::string(to_string(dtype));
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return "calibration measures f32, f16 and bf16 matmuls only";
  if (calibration.quick && dtype != DType::f32)
    return "a quick calibration measures f32 only: run `hal calibrate --device " + info.id + "`";
  return "the device could not run it";
}

// The measured matmul throughput in `dtype` against `min_tflops`, or "" when it suffices. Only a
// figure in that dtype counts: f32's says nothing of f16 (which may run at twice its rate, or
// half), so a dtype not measured is unknown and fails, as an uncalibrated device does.
std::string failed_throughput(double min_tflops, const Device& device, DType dtype) {
  const DeviceInfo& info = device.info();
  const std::shared_ptr<const Calibration> calibration = detail::find_calibration(device);
  if (!calibration)
    return "no measured throughput (not calibrated: run `hal calibrate --device " + info.id + "`)";
  const double measured_tflops = calibration->matmul_gflops(dtype) / 1e3;
  if (measured_tflops == 0)
    return "unknown " + std::string(to_string(dtype)) + " throughput: not measured (" +
           unmeasured_because(*calibration, info, dtype) + ")";
  if (measured_tflops >= min_tflops) return {};
  char text[96];
  std::snprintf(text, sizeof text, "measured %.3g TFLOP/s, needs %.3g", measured_tflops,
                min_tflops);
  return text;
}

// The requirement the device fails, or "" when it meets them all.
std::string failed_requirement(const Requirements& r, const Device& device, const Workload& work) {
  const DeviceInfo& info = device.info();
  if (!r.kinds.empty() && std::find(r.kinds.begin(), r.kinds.end(), info.kind) == r.kinds.end())
    return "kind " + std::string(to_string(info.kind)) + " is not allowed";
  for (DType dtype : r.dtypes)
    if (!info.supports(dtype)) return "lacks dtype " + std::string(to_string(dtype));
  for (const std::string& name : r.features)
    if (!info.has_feature(name)) return "lacks feature " + name;
  const uint64_t needed = std::max(r.min_free_memory, work.memory_bytes);
  if (needed > 0) {
    MemoryFigure free;
    try {
      free = device.memory_free();
    } catch (const Error& error) {  // this device is not eligible; the others still are
      return "free memory unknown: " + error.message();
    }
    if (free.provenance == Provenance::unknown) {
      if (info.memory_total.bytes < needed)
        return format_bytes(info.memory_total.bytes) + " in all, needs " + format_bytes(needed) +
               " free";
    } else if (free.bytes < needed) {
      return format_bytes(free.bytes) + " free, needs " + format_bytes(needed);
    }
  }
  if (r.min_tflops > 0) return failed_throughput(r.min_tflops, device, work.dtype);
  return {};
}

bool ranks_before(const Ranked& a, const Ranked& b) {
  if (a.vendor != b.vendor) return a.vendor < b.vendor;
  const bool a_known = !std::isnan(a.candidate.predicted_seconds);
  const bool b_known = !std::isnan(b.candidate.predicted_seconds);
  if (a_known != b_known) return a_known;
  if (a_known && a.unknown.empty() != b.unknown.empty()) return a.unknown.empty();
  if (a_known && a.candidate.predicted_seconds != b.candidate.predicted_seconds)
    return a.candidate.predicted_seconds < b.candidate.predicted_seconds;
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.order < b.order;
}

std::string prediction_words(const Ranked& r) {
  const Candidate& c = r.candidate;
  std::string words = "predicted " + format_seconds(c.predicted_seconds) +
                      (c.figures == Provenance::measured ? " (calibrated)" : " (stated peaks)");
  if (!r.unknown.empty()) words += ", at least: no " + joined(r.unknown) + " figure";
  return words;
}

// Why `loser` ranks below `choice`, both eligible; `choice_time` reads "sim:3's 1.20 ms".
std::string lost_because(const Ranked& loser, const Ranked& choice, const Requirements& r,
                         const std::string& choice_time) {
  if (loser.vendor != choice.vendor)
    return "vendor " + loser.candidate.device.info().vendor +
           (loser.vendor == kUnlisted ? " is not among the preferred vendors"
                                      : " is preferred less than " + r.vendors[choice.vendor]);
  const Candidate& l = loser.candidate;
  const Candidate& c = choice.candidate;
  const bool l_known = !std::isnan(l.predicted_seconds);
  const bool c_known = !std::isnan(c.predicted_seconds);
  if (!l_known && c_known)
    return "no performance figures (not calibrated, no stated peaks): run `hal calibrate`";
  if (l_known && c_known && !loser.unknown.empty() && choice.unknown.empty())
    return prediction_words(loser) + ", which " + choice_time + " (every figure known) outranks";
  if (l_known && c_known && l.predicted_seconds != c.predicted_seconds) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2fx", l.predicted_seconds / c.predicted_seconds);
    return prediction_words(loser) + ", " + ratio + " " + choice_time;
  }
  if (loser.priority != choice.priority)
    return std::string(kind_words(loser.priority)) + " ranks below " + kind_words(choice.priority) +
           " when times do not decide";
  return "ties with " + c.device.id() + ", which comes first";
}

std::string chosen_because(const Ranked& choice, const Requirements& r, size_t eligible) {
  const Candidate& c = choice.candidate;
  std::vector<std::string> grounds;
  if (!r.vendors.empty() && choice.vendor != kUnlisted)
    grounds.push_back("vendor " + c.device.info().vendor + " preferred");
  grounds.push_back(!std::isnan(c.predicted_seconds)
                        ? prediction_words(choice)
                        : std::string(kind_words(choice.priority)) + " (no performance figures)");
  std::string reason = "chosen: " + grounds.front();
  for (size_t i = 1; i < grounds.size(); ++i) reason += ", " + grounds[i];
  if (eligible == 1) reason += "; the only device that meets the requirements";
  return reason;
}

}  // namespace

Workload reference_workload() {
  Workload workload = Workload::matmul(2048, 2048, 2048);
  workload.name = "reference: " + workload.name;
  workload.memory_bytes = 0;  // ranking, not a requirement
  return workload;
}

Selection rank_devices(const Requirements& requirements, const std::vector<Device>& devices) {
  const Workload work = requirements.workload ? *requirements.workload : reference_workload();
  // NaN or a negative amount would rank nothing it says (a NaN time reads as "no figures").
  const auto refuse_unless = [](bool ok, const std::string& what, double value) {
    if (!ok)
      throw Error(ErrorCode::InvalidArgument,
                  what + " " + std::to_string(value) + " must be finite and >= 0");
  };
  const auto amount = [](double value) { return std::isfinite(value) && value >= 0; };
  refuse_unless(amount(requirements.min_tflops), "requirements: min_tflops",
                requirements.min_tflops);
  const std::string of = "workload '" + work.name + "': ";
  refuse_unless(amount(work.flops), of + "flops", work.flops);
  refuse_unless(amount(work.bytes), of + "bytes", work.bytes);
  refuse_unless(amount(work.host_to_device_bytes), of + "host_to_device_bytes",
                work.host_to_device_bytes);
  refuse_unless(amount(work.device_to_host_bytes), of + "device_to_host_bytes",
                work.device_to_host_bytes);
  std::vector<std::string> vendors;
  for (const std::string& vendor : requirements.vendors)
    vendors.push_back(detail::to_lower(vendor));
  std::vector<Ranked> eligible, ineligible;
  for (size_t i = 0; i < devices.size(); ++i) {
    Ranked ranked;
    ranked.candidate.device = devices[i];
    ranked.order = i;
    const DeviceInfo& info = devices[i].info();
    ranked.priority = kind_priority(info);
    ranked.vendor = vendor_rank(vendors, info.vendor);
    const Estimate estimate = hal::estimate(work, devices[i]);
    ranked.candidate.predicted_seconds = estimate.seconds;
    ranked.candidate.figures = estimate.provenance;
    ranked.unknown = estimate.unknown;
    std::string failed = failed_requirement(requirements, devices[i], work);
    ranked.candidate.eligible = failed.empty();
    ranked.candidate.reason = std::move(failed);
    (ranked.candidate.eligible ? eligible : ineligible).push_back(std::move(ranked));
  }
  std::stable_sort(eligible.begin(), eligible.end(), ranks_before);
  Selection selection;
  selection.candidates.reserve(devices.size());
  if (!eligible.empty()) {
    const Ranked& choice = eligible.front();
    selection.device = choice.candidate.device;
    const std::string choice_time =
        choice.candidate.device.id() + "'s " + format_seconds(choice.candidate.predicted_seconds);
    for (size_t i = 1; i < eligible.size(); ++i)
      eligible[i].candidate.reason = lost_because(eligible[i], choice, requirements, choice_time);
    eligible.front().candidate.reason = chosen_because(choice, requirements, eligible.size());
  }
  for (Ranked& ranked : eligible) selection.candidates.push_back(std::move(ranked.candidate));
  for (Ranked& ranked : ineligible) selection.candidates.push_back(std::move(ranked.candidate));
  return selection;
}

Selection select_device(const Requirements& requirements) {
  const std::vector<Device> devices = Registry::instance().devices();
  Selection selection = rank_devices(requirements, devices);
  if (selection.device) return selection;
  std::string message = devices.empty() ? "no device is visible (check HAL_DEVICES)"
                                        : "no device meets the requirements:";
  for (const Candidate& candidate : selection.candidates)
    message += "\n  " + candidate.device.id() + ": " + candidate.reason;
  throw Error(ErrorCode::NotFound, message);
}

std::string Selection::to_string() const {
  size_t width = 6;
  for (const Candidate& c : candidates) width = std::max(width, c.device.id().size());
  std::string out;
  char line[64];
  std::snprintf(line, sizeof line, "%-*s  %-12s  ", static_cast<int>(width), "device", "predicted");
  out += std::string(line) + "reason\n";
  for (const Candidate& c : candidates) {
    std::snprintf(line, sizeof line, "%-*s  %-12s  ", static_cast<int>(width),
                  c.device.id().c_str(), format_seconds(c.predicted_seconds).c_str());
    out += std::string(line) + (c.eligible ? "" : "not eligible: ") + c.reason + "\n";
  }
  return out;
}

}  // namespace hal
