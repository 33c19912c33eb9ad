// `hal cts --device ID [--json] [--junit FILE] [--filter TEXT]`: runs the conformance suite
// against one device; exits 1 when any case fails. `hal cts --list [--json]` names the cases.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cts.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "json_text.hpp"
#include "output_files.hpp"

namespace hal::tool {
namespace {

// The cases' names, those containing `filter` (all for an empty one), as a run would take them.
void list_cases(bool json, const std::string& filter) {
  std::vector<std::string> names;
  for (const std::string& name : cts::case_names())
    if (name.find(filter) != std::string::npos) names.push_back(name);
  if (!json) {
    for (const std::string& name : names) std::cout << name << "\n";
    return;
  }
  std::cout << nlohmann::ordered_json{{"schema", "hal.cts.list/1"}, {"cases", names}}.dump(
                   2, ' ', false, kReplaceBadUtf8)
            << "\n";
}

}  // namespace

void add_cts_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "cts",
      "Run the conformance suite against a device: each case passes, fails or is not "
      "supported, with the reason");
  auto id = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto junit = std::make_shared<std::string>();
  auto filter = std::make_shared<std::string>();
  auto list = std::make_shared<bool>(false);
  command->add_option("--device", *id, "The device to certify (cpu:0, opencl:0, sim:0 ...)");
  command->add_flag("--json", *json, "Print JSON (schema hal.cts/1)");
  command->add_option("--junit", *junit, "Also write a JUnit XML report to FILE");
  command->add_option("--filter", *filter, "Run only the cases whose names contain TEXT");
  command->add_flag("--list", *list,
                    "List the cases' names and stop (with --json: hal.cts.list/1)");
  set_work(*command, [=] {
    if (*list) return list_cases(*json, *filter);
    if (id->empty()) throw CLI::RequiredError("--device ID (or --list)");
    // Text lines are printed as each case ends, so a run that is stopped still shows how far
    // it came; JSON is one document, printed at the end.
    const cts::CaseCallback print_case = [](const cts::CaseResult& result) {
      std::cout << (result.status == cts::Status::passed   ? "  pass  "
                    : result.status == cts::Status::failed ? "  FAIL  "
                                                           : "  n/s   ")
                << result.name;
      if (!result.reason.empty()) std::cout << ": " << result.reason;
      std::cout << std::endl;
    };
    if (!junit->empty()) check_output_file(*junit, "--junit");  // before the cases run
    // A filter that matches nothing would pass 0 of 0: a gate that checks nothing.
    const std::vector<std::string> names = cts::case_names();
    if (std::none_of(names.begin(), names.end(), [&](const std::string& name) {
          return name.find(*filter) != std::string::npos;
        }))
      throw Error(ErrorCode::InvalidArgument,
                  "--filter '" + *filter + "' matches no case (hal cts --list names them)");
    const cts::Report report =
        cts::run(device(*id), *filter, *json ? cts::CaseCallback{} : print_case);
    if (!junit->empty()) cts::write_junit(*junit, report);
    if (*json) {
      std::cout << cts::to_json(report) << "\n";
    } else {
      std::cout << report.device << ": " << report.count(cts::Status::passed) << " passed, "
                << report.count(cts::Status::failed) << " failed, "
                << report.count(cts::Status::not_supported) << " not supported\n";
    }
    if (report.count(cts::Status::failed) > 0) throw ExitStatus{1};
  });
}

}  // namespace hal::tool
