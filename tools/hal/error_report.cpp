#include "error_report.hpp"
#include "json_text.hpp"

#include <iostream>
#include <nlohmann/json.hpp>

namespace hal::tool {

bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == "--") return false;
    if (argument == "--json") return true;
  }
  return false;
}

void report_error(bool json, std::string_view code, const std::string& message) {
  if (!json) {
    std::cerr << "hal: error: " << message << " [" << code << "]\n";
    return;
  }
  std::cout << nlohmann::ordered_json{{"schema", "hal.error/1"},
                                      {"code", std::string(code)},
                                      {"message", message}}
                   .dump(2, ' ', false, kReplaceBadUtf8)
            << "\n";
}

}  // namespace hal::tool
