// `hal report` and `hal compare --html`: a self-contained page (nothing fetched) with the devices,
// calibration figures, a roofline per calibrated device and comparisons with their histogram,
// CDF and verdict; rendered in headless Chromium (Debian's `chromium`) without console errors,
// every figure drawn, and a screenshot kept in the build tree (a CI artifact).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using Result = hal::test::ShellResult;

// sim:1 does a matmul 10 % slower than sim:0; paced (their modelled time is waited) for the
// comparison, not for the calibration, which then takes half a second rather than four.
constexpr const char* kPacedPair =
    "HAL_SIM_CONFIG=devices=2,pace=1,gflops=0.0055:0.005,bandwidth_gbps=1000,launch_us=0 ";
constexpr const char* kSimPair =
    "HAL_SIM_CONFIG=devices=2,gflops=0.0055:0.005,bandwidth_gbps=1000,launch_us=0 ";

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count_of(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// Every <svg>...</svg> in `html`.
std::vector<std::string> figures_in(const std::string& html) {
  std::vector<std::string> out;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const size_t end = html.find("</svg>", at);
    out.push_back(html.substr(at, end == std::string::npos ? std::string::npos : end - at));
  }
  return out;
}

class ReportCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    directory_ =
        new fs::path(fs::temp_directory_path() / ("hal_report_test_" + std::to_string(getpid())));
    fs::create_directories(*directory_);
    // One comparison (a planted 10 % slowdown), saved as JSON and written as a page of its own.
    const Result compared = hal::test::run_shell(
        "(" + hal::test::child_sanitizer_options() + kPacedPair + HAL_CLI_PATH +
        " compare --a sim:0 --b sim:1 --workload matmul:48 --first-look 10 --max-time 3s --json "
        "--html " +
        (*directory_ / "compare.html").string() + " > " + (*directory_ / "compare.json").string() +
        ")");
    ASSERT_EQ(compared.status, 0) << compared.output;
    // The devices, calibrated (quick, cached in the test's own cache), and the comparison.
    const Result reported =
        hal::test::run_shell("(" + hal::test::child_sanitizer_options() + kSimPair +
                             "HAL_CACHE_DIR=" + (*directory_ / "cache").string() +
                             " " HAL_CLI_PATH
                             " report --devices sim:0,sim:1 "
                             "--compare " +
                             (*directory_ / "compare.json").string() + " --html " +
                             (*directory_ / "report.html").string() + ")");
    ASSERT_EQ(reported.status, 0) << reported.output;
    EXPECT_NE(reported.output.find("wrote"), std::string::npos) << reported.output;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*directory_);
    delete directory_;
  }
  static fs::path file(const std::string& name) { return *directory_ / name; }
  static fs::path* directory_;
};
fs::path* ReportCli::directory_ = nullptr;

void expect_self_contained(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Nothing to fetch: no URLs, no external scripts, styles or images.
  for (const char* fetch : {"http://", "https://", "src=", "href=", "@import", "url(http"})
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  for (const std::string& svg : figures_in(html)) {
    const bool drawn = svg.find("<rect x=") != std::string::npos ||
                       svg.find("<polyline") != std::string::npos ||
                       svg.find("<circle") != std::string::npos;
    EXPECT_TRUE(drawn) << svg.substr(0, 300);
  }
}

TEST_F(ReportCli, WritesTheDevicesCalibrationRooflinesAndComparison) {
  const std::string html = read_text(file("report.html"));
  expect_self_contained(html);
  const nlohmann::json comparison = nlohmann::json::parse(read_text(file("compare.json")));
  for (const char* id : {"sim:0", "sim:1"})
    EXPECT_NE(html.find("<td>" + std::string(id) + "</td>"), std::string::npos) << id;
  // Bandwidth bars, matmul by size, a roofline per device, then the histogram and the CDF.
  EXPECT_EQ(figures_in(html).size(), 6u);
  EXPECT_EQ(count_of(html, "Roofline: sim:"), 2u * 2);  // each figure's <title> and heading
  EXPECT_NE(html.find("Distribution of runs"), std::string::npos);
  EXPECT_NE(html.find("Cumulative distribution"), std::string::npos);
  EXPECT_NE(html.find(comparison["verdict"].get<std::string>().substr(0, 20)), std::string::npos);
  // The decision as the comparison made it (differ, on an idle host; a loaded one may stop short).
  EXPECT_NE(html.find("class=\"verdict " + comparison["decision"].get<std::string>() + "\""),
            std::string::npos);
}

TEST_F(ReportCli, CompareWritesItsOwnPage) {
  const std::string html = read_text(file("compare.html"));
  expect_self_contained(html);
  // Devices of both sides (no calibration cached for them here), the histogram and the CDF.
  EXPECT_NE(html.find("<td>sim:1</td>"), std::string::npos);
  EXPECT_NE(html.find("No device has calibration figures"), std::string::npos);
  EXPECT_EQ(figures_in(html).size(), 2u);
  const nlohmann::json comparison = nlohmann::json::parse(read_text(file("compare.json")));
  EXPECT_NE(html.find(comparison["verdict"].get<std::string>().substr(0, 20)), std::string::npos);
}

TEST(ReportCliInput, RefusesBadInput) {
  const auto refused = [](const std::string& arguments, const std::string& code,
                          const std::string& message) {
    const Result r =
        hal::test::run_shell_stdout(std::string(HAL_CLI_PATH) + " report " + arguments + " --json");
    EXPECT_EQ(r.status, 1) << arguments << ": " << r.output;
    const nlohmann::json error = nlohmann::json::parse(r.output);
    EXPECT_EQ(error["code"], code) << arguments;
    EXPECT_NE(error["message"].get<std::string>().find(message), std::string::npos)
        << arguments << ": " << error["message"];
  };
  const fs::path directory =
      fs::temp_directory_path() / ("hal_report_input_test_" + std::to_string(getpid()));
  fs::create_directories(directory);
  const std::string page = (directory / "bad.html").string();
  refused("--devices nope:0 --html " + page, "NotFound", "no device 'nope:0'");
  refused("--devices cpu:0 --no-calibrate --compare /nonexistent.json --html " + page,
          "InvalidArgument", "cannot read --compare /nonexistent.json");
  std::ofstream(directory / "not_compare.json") << R"({"schema": "hal.bench/1"})";
  refused("--devices cpu:0 --no-calibrate --compare " + (directory / "not_compare.json").string() +
              " --html " + page,
          "InvalidArgument", "comparison 1 is not hal.compare/1");
  refused("--devices cpu:0 --no-calibrate --html /nonexistent/dir/page.html", "InvalidArgument",
          "cannot write /nonexistent/dir/page.html");
  EXPECT_FALSE(fs::exists(page));  // refused before anything was written
  fs::remove_all(directory);
}

// Side B's environment entries must be VAR=VALUE strings: another type is refused naming the
// field and the entry (it was an "Internal" JSON type error); strings are shown beside B.
TEST_F(ReportCli, ChecksSideBsEnvironment) {
  nlohmann::json comparison = nlohmann::json::parse(read_text(file("compare.json")));
  const auto report = [&](const nlohmann::json& b_env) {
    comparison["b_env"] = b_env;
    std::ofstream(file("b_env.json")) << comparison.dump();
    return hal::test::run_shell_stdout(
        std::string(HAL_CLI_PATH) + " report --devices cpu:0 --no-calibrate --json --compare " +
        file("b_env.json").string() + " --html " + file("b_env.html").string());
  };
  for (const auto& [b_env, message] :
       {std::pair{nlohmann::json::array({"X=1", 5}),
                  "report: comparison 1: 'b_env' entry 2 is number, not a VAR=VALUE string"},
        std::pair{nlohmann::json("X=1"),
                  "report: comparison 1: 'b_env' is string, not an array of VAR=VALUE strings"}}) {
    const Result refused = report(b_env);
    EXPECT_EQ(refused.status, 1) << refused.output;
    const nlohmann::json error = nlohmann::json::parse(refused.output);
    EXPECT_EQ(error["code"], "InvalidArgument") << refused.output;
    EXPECT_EQ(error["message"].get<std::string>(), message);
  }
  const Result shown = report(nlohmann::json::array({"HAL_CPU_ISA=scalar", "X=1"}));
  ASSERT_EQ(shown.status, 0) << shown.output;
  EXPECT_NE(read_text(file("b_env.html")).find("vs B sim:1 with HAL_CPU_ISA=scalar X=1</h3>"),
            std::string::npos);
}

// The page in a real browser: it loads without a console message (the page itself reports an
// empty figure as a console error), every figure is drawn, and the screenshot is kept.
std::optional<std::string> chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(path)) return std::string(path);
  return std::nullopt;
}

struct Rendered {
  std::string dom, console;
};

Rendered render(const std::string& browser, const fs::path& page, const fs::path& screenshot) {
  const fs::path log = page.string() + ".log";
  // In parentheses: run_shell sends the shell's stderr to its output, the browser's goes to `log`.
  const Result r = hal::test::run_shell(
      "(timeout 60 " + browser +
      " --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1800"
      " --enable-logging=stderr --v=0 --screenshot=" +
      screenshot.string() + " --dump-dom file://" + page.string() + " 2>" + log.string() + ")");
  EXPECT_EQ(r.status, 0) << read_text(log);
  std::string console;
  std::istringstream lines(read_text(log));
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos) console += line + "\n";
  return {r.output, console};
}

TEST_F(ReportCli, RendersInHeadlessChromiumWithoutErrors) {
  const auto browser = chromium();
  if (!browser)
    GTEST_SKIP() << "chromium is not installed (Debian's chromium; scripts/install-deps.sh "
                    "installs it): the page is not rendered";
  const fs::path screenshot = HAL_REPORT_SCREENSHOT;
  fs::remove(screenshot);
  const Rendered page = render(*browser, file("report.html"), screenshot);
  EXPECT_EQ(page.console, "") << "console messages while loading the report";
  EXPECT_NE(page.dom.find("data-figures=\"6\""), std::string::npos) << page.dom.substr(0, 2000);
  EXPECT_NE(page.dom.find("data-empty-figures=\"0\""), std::string::npos);
  ASSERT_TRUE(fs::exists(screenshot));
  EXPECT_GT(fs::file_size(screenshot), 20'000u);  // a page of text and figures, not a blank one
  EXPECT_EQ(read_text(screenshot).substr(1, 3), "PNG");

  // The same page with an empty figure planted: the check above would see it.
  std::string broken = read_text(file("report.html"));
  broken.insert(broken.find("<h2>Devices</h2>"), "<svg width=\"40\" height=\"40\"></svg>");
  std::ofstream(file("broken.html")) << broken;
  const Rendered planted = render(*browser, file("broken.html"), file("broken.png"));
  EXPECT_NE(planted.console.find("hal report: figure 0 is empty"), std::string::npos)
      << planted.console;
  EXPECT_NE(planted.dom.find("data-empty-figures=\"1\""), std::string::npos);
}

}  // namespace
