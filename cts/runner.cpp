// Running the cases, and their reports.
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "case.hpp"
#include "cts.hpp"

namespace hal::cts {
namespace {

const Cases& all_cases() {
  static const Cases cases = [] {
    Cases out;
    add_device_cases(out);
    add_memory_cases(out);
    add_stream_cases(out);
    add_copy_cases(out);
    add_kernel_cases(out);
    add_tensor_cases(out);
    add_op_cases(out);
    add_op_reference_cases(out);
    add_op_reduce_cases(out);
    add_op_conv_cases(out);
    add_op_conv_transpose_cases(out);
    add_op_layer_cases(out);
    add_thread_cases(out);
    return out;
  }();
  return cases;
}

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string_view to_string(Status status) {
  switch (status) {
    case Status::passed:
      return "pass";
    case Status::failed:
      return "fail";
    case Status::not_supported:
      return "not-supported";
  }
  return "";
}

size_t Report::count(Status status) const {
  size_t n = 0;
  for (const CaseResult& result : cases) n += result.status == status;
  return n;
}

void check_error(const std::function<void()>& fn, ErrorCode code,
                 const std::vector<std::string>& parts, const std::string& what) {
  try {
    fn();
  } catch (const Error& error) {
    check(error.code() == code, what + ": expected " + std::string(hal::to_string(code)) +
                                    ", got " + std::string(hal::to_string(error.code())) + ": " +
                                    error.message());
    for (const std::string& part : parts)
      check(error.message().find(part) != std::string::npos,
            what + ": the message lacks '" + part + "': " + error.message());
    return;
  }
  throw Failure(what + ": expected " + std::string(hal::to_string(code)) + ", nothing was thrown");
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const Case& c : all_cases()) names.push_back(c.name);
  return names;
}

Report run(const Device& device, const std::string& filter, const CaseCallback& on_case) {
  Report report{device.id(), {}};
  for (const Case& c : all_cases()) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    CaseResult result{c.name, Status::passed, "", 0};
    const auto start = std::chrono::steady_clock::now();
    try {
      c.body(device);
    } catch (const NotSupported& why) {
      result.status = Status::not_supported;
      result.reason = why.what();
    } catch (const Failure& failure) {
      result.status = Status::failed;
      result.reason = failure.what();
    } catch (const std::exception& error) {
      result.status = Status::failed;
      result.reason = std::string("unexpected exception: ") + error.what();
    } catch (...) {
      result.status = Status::failed;
      result.reason = "unexpected exception of an unknown type";
    }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_case) on_case(result);
    report.cases.push_back(std::move(result));
  }
  return report;
}

std::string to_json(const Report& report) {
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const CaseResult& result : report.cases)
    cases.push_back({{"name", result.name},
                     {"status", std::string(to_string(result.status))},
                     {"reason", result.reason},
                     {"seconds", result.seconds}});
  return nlohmann::ordered_json{{"schema", "hal.cts/1"},
                                {"device", report.device},
                                {"passed", report.count(Status::passed)},
                                {"failed", report.count(Status::failed)},
                                {"not_supported", report.count(Status::not_supported)},
                                {"cases", cases}}
      .dump(2);
}

std::string to_junit(const Report& report, std::string_view suite) {
  double total = 0;
  for (const CaseResult& result : report.cases) total += result.seconds;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += "<testsuite name=\"" + xml_escaped(std::string(suite)) + "." + xml_escaped(report.device) +
         "\" tests=\"" + std::to_string(report.cases.size()) + "\" failures=\"" +
         std::to_string(report.count(Status::failed)) + "\" skipped=\"" +
         std::to_string(report.count(Status::not_supported)) + "\" time=\"" +
         std::to_string(total) + "\">\n";
  for (const CaseResult& result : report.cases) {
    xml += "  <testcase classname=\"" + xml_escaped(report.device) + "\" name=\"" +
           xml_escaped(result.name) + "\" time=\"" + std::to_string(result.seconds) + "\"";
    if (result.status == Status::passed) {
      xml += "/>\n";
      continue;
    }
    xml += ">\n";
    if (result.status == Status::failed)
      xml += "    <failure message=\"" + xml_escaped(result.reason) + "\"/>\n";
    else
      xml += "    <skipped message=\"" + xml_escaped(result.reason) + "\"/>\n";
    xml += "  </testcase>\n";
  }
  xml += "</testsuite>\n";
  return xml;
}

void write_junit(const std::string& path, const Report& report, std::string_view suite) {
  std::ofstream out(path);
  out << to_junit(report, suite);
  out.close();
  if (!out) throw Error(ErrorCode::InvalidArgument, "cannot write the JUnit report to " + path);
}

}  // namespace hal::cts
