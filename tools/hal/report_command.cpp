// `hal report [--devices ID,...] [--compare FILE.json]... [--no-calibrate] --html FILE`: one
// self-contained HTML page with the devices, their calibration figures, a roofline per device
// and comparisons saved by `hal compare --json` (docs/evidence.md).
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "hal/calibration.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "json_text.hpp"
#include "option_values.hpp"
#include "report_html.hpp"

namespace hal::tool {
namespace {

struct ReportOptions {
  std::vector<std::string> devices, compare_files;
  std::string html;
  bool no_calibrate = false;
  bool json = false;
};

nlohmann::json read_comparison(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error(ErrorCode::InvalidArgument, "report: cannot read --compare " + file);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw Error(ErrorCode::InvalidArgument,
                "report: --compare " + file + " is not JSON (" + error.what() + ")");
  }
}

void write_device_report(const ReportOptions& o) {
  check_writable(o.html);  // before measuring anything
  ReportContent content;
  std::vector<Device> devices;
  if (o.devices.empty())
    devices = Registry::instance().devices();
  else
    for (const std::string& id : names_option("--devices", o.devices))
      devices.push_back(device(id));
  for (const std::string& file : o.compare_files)
    content.comparisons.push_back(read_comparison(file));
  for (const Device& d : devices) {
    content.devices.push_back(d.info());
    std::optional<Calibration> figures = cached_calibration(d);
    if (!figures && !o.no_calibrate) figures = calibrate(d, {.use_cache = true, .quick = true});
    content.calibrations.push_back(std::move(figures));
  }
  write_report(o.html, report_html(content));
  if (o.json) {
    nlohmann::ordered_json ids = nlohmann::ordered_json::array();
    for (const DeviceInfo& d : content.devices) ids.push_back(d.id);
    std::cout << nlohmann::ordered_json{{"schema", "hal.report/1"},
                                        {"html", o.html},
                                        {"devices", ids},
                                        {"comparisons", content.comparisons.size()}}
                     .dump(2, ' ', false, kReplaceBadUtf8)
              << "\n";
    return;
  }
  std::cout << "hal report: wrote " << o.html << " (" << content.devices.size() << " device"
            << (content.devices.size() == 1 ? "" : "s") << ", " << content.comparisons.size()
            << " comparison" << (content.comparisons.size() == 1 ? "" : "s") << ")\n";
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "report", "Write one self-contained HTML page: devices, calibration, rooflines, comparisons");
  auto o = std::make_shared<ReportOptions>();
  command->add_option("--devices", o->devices,
                      "Devices to show, ID,ID,... (default: every visible one)");
  command->add_option("--compare", o->compare_files,
                      "A comparison saved by `hal compare --json` (repeat for several)");
  command->add_flag("--no-calibrate", o->no_calibrate,
                    "Show cached calibration figures only; measure none (default: a quick "
                    "calibration of a device with none cached)");
  command->add_option("--html", o->html, "The page to write")->required();
  command->add_flag("--json", o->json, "Print what was written as JSON (schema hal.report/1)");
  set_work(*command, [o] { write_device_report(*o); });
}

}  // namespace hal::tool
