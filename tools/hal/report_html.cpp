#include "report_html.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>

#include "hal/error.hpp"
#include "hal/units.hpp"
#include "hal/version.hpp"
#include "svg_plot.hpp"

namespace hal::tool {
namespace {

using plot::escape;

std::string formatted(double value, const char* format) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// A figure that is positive when measured, a dash otherwise.
std::string figure_text(double value, const char* format = "%.3g") {
  return value > 0 ? formatted(value, format) : "&ndash;";
}

// Any finite value (a signed effect size, a difference of 0), a dash for the others.
std::string number_text(double value, const char* format) {
  return std::isfinite(value) ? formatted(value, format) : "&ndash;";
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &utc);
  return text;
}

constexpr const char* kStyle = R"(
body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
h3{font-size:15px}table{border-collapse:collapse;margin:8px 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.figures{display:flex;flex-wrap:wrap;gap:12px}.figures svg{border:1px solid #e3e3e3}
.verdict{font-size:16px;font-weight:bold;padding:8px 12px;border-left:4px solid #1f77b4;background:#f4f8fc}
.verdict.differ{border-color:#d62728;background:#fcf4f4}.verdict.equivalent{border-color:#2ca02c;background:#f4fcf4}
.note{color:#666;font-size:13px}
)";

// The page checks its own figures once drawn: an SVG with nothing drawn (an empty box) is a
// console error, which hal's headless-browser test looks for.
constexpr const char* kSelfCheck = R"(
window.addEventListener("load", function () {
  var figures = document.querySelectorAll("svg"), empty = 0;
  figures.forEach(function (svg, i) {
    var box = svg.getBBox();
    if (svg.childElementCount === 0 || box.width === 0 || box.height === 0) {
      empty++;
      console.error("hal report: figure " + i + " is empty");
    }
  });
  document.body.setAttribute("data-figures", figures.length);
  document.body.setAttribute("data-empty-figures", empty);
});
)";

std::string devices_section(const ReportContent& c) {
  std::string html =
      "<h2>Devices</h2><table><tr><th>id</th><th>name</th><th>vendor</th><th>kind</th>"
      "<th>architecture</th><th>compute units</th><th>clock MHz</th><th>memory</th>"
      "<th>dtypes</th><th>peak f32 GFLOP/s</th><th>peak GB/s</th></tr>";
  for (const DeviceInfo& d : c.devices) {
    std::string dtypes;
    for (DType t : d.dtypes) dtypes += (dtypes.empty() ? "" : " ") + std::string(to_string(t));
    html += "<tr><td>" + escape(d.id) + "</td><td>" + escape(d.name) + "</td><td>" +
            escape(d.vendor) + "</td><td>" + escape(std::string(to_string(d.kind))) + "</td><td>" +
            escape(d.architecture) + "</td><td class=\"n\">" + std::to_string(d.compute_units) +
            "</td><td class=\"n\">" + std::to_string(d.clock_mhz) + "</td><td class=\"n\">" +
            escape(format_bytes(d.memory_total.bytes)) + "</td><td>" + escape(dtypes) +
            "</td><td class=\"n\">" + figure_text(d.peak.f32_gflops) + "</td><td class=\"n\">" +
            figure_text(d.peak.bandwidth_gbps) + "</td></tr>";
  }
  return html +
         "</table><p class=\"note\">Peak figures are what a device reports or hal "
         "estimates, never measured; the calibration below measures.</p>";
}

// The arithmetic intensity of an n x n x n product: 2 n^3 flops over three n x n matrices
// read or written once.
double matmul_intensity(const MatmulFigure& m) {
  return 2.0 * static_cast<double>(m.size) / (3.0 * static_cast<double>(size_of(m.dtype)));
}

double best_gflops(const Calibration& c) {
  double best = 0;
  for (const MatmulFigure& m : c.matmul) best = std::max(best, m.gflops);
  return best;
}

std::string roofline(const DeviceInfo& d, const Calibration& c) {
  const double peak = best_gflops(c), bandwidth = c.device_bandwidth_gbps;
  plot::Chart chart{
      "Roofline: " + d.id, {"arithmetic intensity (flop/byte)", true}, {"GFLOP/s", true}, {}};
  // The roofs span the points' intensities and each roof's knee, a decade either side.
  double low = INFINITY, high = 0;
  for (const MatmulFigure& m : c.matmul)
    if (m.gflops > 0) {
      low = std::min(low, matmul_intensity(m));
      high = std::max(high, matmul_intensity(m));
    }
  const auto widen = [&](double top, double slope) {
    if (top > 0 && slope > 0) {
      low = std::min(low, top / slope);
      high = std::max(high, top / slope);
    }
  };
  widen(peak, bandwidth);
  widen(d.peak.f32_gflops, d.peak.bandwidth_gbps);
  low /= 10;
  high *= 10;
  const auto roof = [&](std::string label, double top, double slope, plot::Style style, int color) {
    const double knee = top / slope;
    return plot::Series{
        std::move(label), {low, knee, high}, {std::min(top, slope * low), top, top}, style, color};
  };
  if (peak > 0 && bandwidth > 0)
    chart.series.push_back(roof("measured roof", peak, bandwidth, plot::Style::line, 0));
  if (d.peak.f32_gflops > 0 && d.peak.bandwidth_gbps > 0)
    chart.series.push_back(roof("peak (not measured)", d.peak.f32_gflops, d.peak.bandwidth_gbps,
                                plot::Style::dashed, 4));
  for (DType dtype : kAllDTypes) {
    plot::Series points{"matmul " + std::string(to_string(dtype)),
                        {},
                        {},
                        plot::Style::points,
                        dtype == DType::f32 ? 1 : 2 + static_cast<int>(chart.series.size())};
    for (const MatmulFigure& m : c.matmul)
      if (m.dtype == dtype && m.gflops > 0) {
        points.x.push_back(matmul_intensity(m));
        points.y.push_back(m.gflops);
      }
    if (!points.x.empty()) chart.series.push_back(std::move(points));
  }
  if (chart.series.empty()) return "";
  return plot::chart_svg(chart);
}

std::string calibration_section(const ReportContent& c) {
  std::string html = "<h2>Calibration</h2>";
  std::string table =
      "<table><tr><th>device</th><th>host&rarr;device GB/s</th><th>device&rarr;host GB/s</th>"
      "<th>on-device GB/s</th><th>launch &micro;s</th><th>best matmul GFLOP/s</th>"
      "<th>measured</th></tr>";
  plot::Bars bandwidth{"Copy bandwidth",
                       "GB/s",
                       {},
                       {"host to device", "device to host", "on device"},
                       {{}, {}, {}}};
  plot::Chart matmul{
      "Matmul throughput by size", {"n (n×n×n product)", true}, {"GFLOP/s", true}, {}};
  std::vector<std::string> uncalibrated, rooflines;
  for (size_t i = 0; i < c.devices.size(); ++i) {
    const DeviceInfo& d = c.devices[i];
    if (i >= c.calibrations.size() || !c.calibrations[i]) {
      uncalibrated.push_back(d.id);
      continue;
    }
    const Calibration& k = *c.calibrations[i];
    table += "<tr><td>" + escape(d.id) + "</td><td class=\"n\">" +
             figure_text(k.host_to_device_gbps) + "</td><td class=\"n\">" +
             figure_text(k.device_to_host_gbps) + "</td><td class=\"n\">" +
             figure_text(k.device_bandwidth_gbps) + "</td><td class=\"n\">" +
             figure_text(k.launch_latency_us) + "</td><td class=\"n\">" +
             figure_text(best_gflops(k), "%.4g") + "</td><td>" + escape(k.measured_at) +
             (k.quick ? " (quick)" : "") + "</td></tr>";
    bandwidth.categories.push_back(d.id);
    bandwidth.values[0].push_back(k.host_to_device_gbps);
    bandwidth.values[1].push_back(k.device_to_host_gbps);
    bandwidth.values[2].push_back(k.device_bandwidth_gbps);
    for (DType dtype : kAllDTypes) {
      plot::Series s{d.id + " " + std::string(to_string(dtype)),
                     {},
                     {},
                     dtype == DType::f32 ? plot::Style::marked : plot::Style::dashed,
                     static_cast<int>(i)};
      for (const MatmulFigure& m : k.matmul)
        if (m.dtype == dtype && m.gflops > 0) {
          s.x.push_back(static_cast<double>(m.size));
          s.y.push_back(m.gflops);
        }
      if (!s.x.empty()) matmul.series.push_back(std::move(s));
    }
    if (std::string svg = roofline(d, k); !svg.empty()) rooflines.push_back(std::move(svg));
  }
  if (bandwidth.categories.empty()) {
    html +=
        "<p class=\"note\">No device has calibration figures (run <code>hal calibrate</code>, "
        "or <code>hal report</code> without <code>--no-calibrate</code>).</p>";
    return html;
  }
  html += table + "</table><div class=\"figures\">" + plot::bars_svg(bandwidth);
  if (!matmul.series.empty()) html += plot::chart_svg(matmul);
  html += "</div>";
  if (!uncalibrated.empty()) {
    std::string ids;
    for (const std::string& id : uncalibrated) ids += (ids.empty() ? "" : ", ") + id;
    html += "<p class=\"note\">Not calibrated: " + escape(ids) + ".</p>";
  }
  html +=
      "<h2>Rooflines</h2><p class=\"note\">The measured roof: the best matmul throughput "
      "and the on-device copy bandwidth (bytes read and written). Each point is a calibration "
      "matmul of n&times;n&times;n at 2n/(3&middot;element size) flop per byte.</p>"
      "<div class=\"figures\">";
  for (const std::string& svg : rooflines) html += svg;
  return html + "</div>";
}

template <typename T>
T field(const nlohmann::json& j, const char* name, size_t index) {
  if (!j.contains(name))
    throw Error(ErrorCode::InvalidArgument, "report: comparison " + std::to_string(index + 1) +
                                                " has no '" + name + "' (not hal.compare/1?)");
  try {
    // JSON has no infinity or NaN: hal.compare/1 writes them as null (an effect size of two
    // constant sides), which reads back as NaN.
    if constexpr (std::is_same_v<T, double>)
      if (j.at(name).is_null()) return std::numeric_limits<double>::quiet_NaN();
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::InvalidArgument, "report: comparison " + std::to_string(index + 1) +
                                                ": '" + name + "' has the wrong type");
  }
}

// Side B's environment ("b_env", VAR=VALUE strings; none when absent), or InvalidArgument
// naming the entry that is not a string.
std::vector<std::string> environment_entries(const nlohmann::json& j, size_t index) {
  std::vector<std::string> entries;
  if (!j.contains("b_env")) return entries;
  const std::string where = "report: comparison " + std::to_string(index + 1) + ": 'b_env'";
  if (!j["b_env"].is_array())
    throw Error(ErrorCode::InvalidArgument,
                where + " is " + j["b_env"].type_name() + ", not an array of VAR=VALUE strings");
  for (size_t i = 0; i < j["b_env"].size(); ++i) {
    const nlohmann::json& entry = j["b_env"][i];
    if (!entry.is_string())
      throw Error(ErrorCode::InvalidArgument, where + " entry " + std::to_string(i + 1) + " is " +
                                                  entry.type_name() + ", not a VAR=VALUE string");
    entries.push_back(entry.get<std::string>());
  }
  return entries;
}

std::string comparison(const nlohmann::json& j, size_t index) {
  if (field<std::string>(j, "schema", index) != "hal.compare/1")
    throw Error(ErrorCode::InvalidArgument,
                "report: comparison " + std::to_string(index + 1) + " is not hal.compare/1");
  const std::string a = field<std::string>(j, "a", index), b = field<std::string>(j, "b", index),
                    unit = field<std::string>(j, "unit", index),
                    decision = field<std::string>(j, "decision", index),
                    workload = field<std::string>(j, "workload", index);
  std::vector<double> sa = field<std::vector<double>>(j, "samples_a", index),
                      sb = field<std::vector<double>>(j, "samples_b", index);
  const auto ci = field<std::vector<double>>(j, "ci", index);
  if (sa.empty() || sb.empty() || ci.size() != 2)
    throw Error(ErrorCode::InvalidArgument, "report: comparison " + std::to_string(index + 1) +
                                                " has no samples or a malformed 'ci'");
  // Seconds shown in the unit that suits them.
  std::string shown_unit = unit;
  if (unit == "s") {
    std::vector<double> all = sa;
    all.insert(all.end(), sb.begin(), sb.end());
    std::nth_element(all.begin(), all.begin() + all.size() / 2, all.end());
    const double middle = all[all.size() / 2];
    const double scale = middle < 1e-3 ? 1e6 : middle < 1 ? 1e3 : 1;
    shown_unit = scale == 1e6 ? "µs" : scale == 1e3 ? "ms" : "s";
    for (double& v : sa) v *= scale;
    for (double& v : sb) v *= scale;
  }
  std::string b_side = b;
  const std::vector<std::string> b_env = environment_entries(j, index);
  if (!b_env.empty()) b_side += " with";
  for (const std::string& e : b_env) b_side += " " + e;
  const std::string x_label = field<std::string>(j, "metric", index) + " (" + shown_unit + ")";
  std::string html = "<h3>" + escape(workload) + ": A " + escape(a) + " vs B " + escape(b_side) +
                     "</h3><p class=\"verdict " + escape(decision) + "\">" +
                     escape(field<std::string>(j, "verdict", index)) + "</p>";
  html += "<table><tr><th>ratio B/A (medians)</th><th>" +
          figure_text(field<double>(j, "confidence", index) * 100, "%.4g") +
          " % CI</th><th>Welch p</th><th>Mann–Whitney p</th><th>Hedges g</th><th>n</th>"
          "<th>outputs max|A−B|</th></tr><tr><td class=\"n\">" +
          figure_text(field<double>(j, "ratio", index), "%.4f") + "</td><td class=\"n\">" +
          figure_text(ci[0], "%.4f") + "–" + figure_text(ci[1], "%.4f") + "</td><td class=\"n\">" +
          figure_text(field<double>(j, "p_value", index), "%.2g") + "</td><td class=\"n\">" +
          figure_text(field<double>(j, "mann_whitney_p", index), "%.2g") + "</td><td class=\"n\">" +
          number_text(field<double>(j, "effect_size", index), "%.3g") + "</td><td class=\"n\">" +
          std::to_string(sa.size()) + "+" + std::to_string(sb.size()) + "</td><td class=\"n\">" +
          number_text(field<double>(j, "max_abs_diff", index), "%.2g") + "</td></tr></table>";
  const std::string label_a = "A " + a, label_b = "B " + b;
  plot::Histogram histogram{"Distribution of runs", x_label, {label_a, label_b}, {sa, sb}};
  plot::Chart cdf{"Cumulative distribution", {x_label}, {"fraction of runs"}, {}};
  cdf.y.min = 0;
  cdf.y.max = 1.02;
  cdf.series.push_back(plot::cdf_series(label_a, sa, 0));
  cdf.series.push_back(plot::cdf_series(label_b, sb, 1));
  return html + "<div class=\"figures\">" + plot::histogram_svg(histogram) + plot::chart_svg(cdf) +
         "</div>";
}

}  // namespace

std::string report_html(const ReportContent& c) {
  std::string body = "<h1>" + escape(c.title) + "</h1><p class=\"note\">hal " +
                     escape(std::string(hal::version())) + " &middot; " + utc_now() + "</p>";
  if (!c.devices.empty()) body += devices_section(c) + calibration_section(c);
  if (!c.comparisons.empty()) {
    body +=
        "<h2>Comparisons</h2><p class=\"note\">Each run is one timed sample; A and B ran "
        "interleaved in random order. The verdict comes from hal compare's sequential "
        "design (Welch's t-test on log times and Mann–Whitney U at each look's level, a "
        "bootstrap interval of the ratio of medians).</p>";
    for (size_t i = 0; i < c.comparisons.size(); ++i) body += comparison(c.comparisons[i], i);
  }
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         escape(c.title) + "</title><style>" + kStyle + "</style></head><body>\n" + body +
         "\n<script>" + kSelfCheck + "</script></body></html>\n";
}

void check_writable(const std::string& file) {
  std::error_code error;
  const bool existed = std::filesystem::exists(file, error);
  if (!std::ofstream(file, std::ios::app))
    throw Error(ErrorCode::InvalidArgument, "report: cannot write " + file);
  if (!existed) std::filesystem::remove(file, error);
}

void write_report(const std::string& file, const std::string& html) {
  std::ofstream out(file, std::ios::binary);
  out << html;
  out.close();
  if (!out) throw Error(ErrorCode::InvalidArgument, "report: cannot write " + file);
}

}  // namespace hal::tool
