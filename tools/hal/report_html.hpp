// hal report's page: one self-contained HTML file (inline CSS and SVG, nothing fetched) with the
// devices, their calibration figures, a roofline per device and comparisons (hal.compare/1)
// with their distributions and verdicts. `hal report` and `hal compare --html` write it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hal/calibration.hpp"
#include "hal/device_info.hpp"

namespace hal::tool {

struct ReportContent {
  std::string title = "hal report";
  std::vector<DeviceInfo> devices;
  // devices[i]'s figures; none where it was not calibrated (or the report did not measure).
  std::vector<std::optional<Calibration>> calibrations;
  std::vector<nlohmann::json> comparisons;  // hal.compare/1 objects
};

// The page. InvalidArgument naming the comparison when one lacks a hal.compare/1 field.
std::string report_html(const ReportContent& content);

// InvalidArgument naming `file` unless it can be written; leaves no file behind (called before a
// long measurement, so that a bad path is found first).
void check_writable(const std::string& file);

// Writes `html` to `file`; InvalidArgument naming the file when it cannot.
void write_report(const std::string& file, const std::string& html);

}  // namespace hal::tool
