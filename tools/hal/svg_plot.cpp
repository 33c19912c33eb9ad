#include "svg_plot.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>

#include "hal/error.hpp"

namespace hal::tool::plot {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c",
                                    "#9467bd", "#ff7f0e", "#17becf"};
const char* color_of(int index) {
  return kPalette[static_cast<size_t>(std::abs(index)) % std::size(kPalette)];
}

// The plot area inside a figure.
constexpr double kLeft = 70, kRight = 16, kTop = 46, kBottom = 48;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// Coordinates: at most 2 decimals, which is finer than a pixel.
std::string coordinate(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// An axis mapped onto pixels [from, to].
struct Scale {
  bool log = false;
  double min = 0, max = 1, from = 0, to = 1;
  double operator()(double value) const {
    const double a = log ? std::log10(min) : min, b = log ? std::log10(max) : max;
    const double v = log ? std::log10(value) : value;
    return from + (v - a) / (b - a) * (to - from);
  }
};

// A range from data: linear ones widened by 5 % (and to a unit when flat), log ones snapped to
// decades.
void fit_range(const Axis& axis, double low, double high, double& min, double& max) {
  if (axis.log) {
    min = std::pow(10, std::floor(std::log10(low)));
    max = std::pow(10, std::ceil(std::log10(high)));
    if (max <= min) max = min * 10;
  } else {
    const double margin = high > low ? 0.05 * (high - low) : std::max(1.0, std::fabs(low) * 0.1);
    min = low - margin;
    max = high + margin;
  }
  if (!std::isnan(axis.min)) min = axis.min;
  if (!std::isnan(axis.max)) max = axis.max;
}

// Ticks: 1, 2 or 5 times a power of ten on a linear axis; decades on a log axis (with 2 and 5
// when it spans less than three).
std::vector<double> ticks(const Scale& s) {
  std::vector<double> out;
  if (s.log) {
    const int first = static_cast<int>(std::floor(std::log10(s.min) + 1e-9));
    const int last = static_cast<int>(std::ceil(std::log10(s.max) - 1e-9));
    const bool fine = last - first < 3;
    for (int decade = first; decade <= last && out.size() < 40; ++decade)
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !fine) continue;
        const double v = m * std::pow(10, decade);
        if (v >= s.min * (1 - 1e-9) && v <= s.max * (1 + 1e-9)) out.push_back(v);
      }
    return out;
  }
  const double raw = (s.max - s.min) / 5;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  const double step = raw / power < 1.5 ? power : raw / power < 3.5 ? 2 * power : 5 * power;
  for (double v = std::ceil(s.min / step) * step; v <= s.max + 1e-9 * step && out.size() < 40;
       v += step)
    out.push_back(std::fabs(v) < 1e-12 * step ? 0.0 : v);
  return out;
}

std::string open_svg(int width, int height, const std::string& title) {
  return "<svg class=\"figure\" viewBox=\"0 0 " + std::to_string(width) + " " +
         std::to_string(height) + "\" width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">" +
         "<title>" + escape(title) +
         "</title><rect width=\"100%\" height=\"100%\" "
         "fill=\"#fff\"/><text x=\"" +
         coordinate(width / 2.0) +
         "\" y=\"18\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">" +
         escape(title) + "</text>";
}

// Frame, grid, tick labels and axis labels.
std::string axes(const Scale& x, const Scale& y, const std::string& x_label,
                 const std::string& y_label, int height, bool x_ticks = true) {
  std::string svg = "<g stroke=\"#ddd\" stroke-width=\"1\">";
  std::string labels = "<g fill=\"#333\">";
  if (x_ticks)
    for (double v : ticks(x)) {
      const std::string px = coordinate(x(v));
      svg += "<line x1=\"" + px + "\" x2=\"" + px + "\" y1=\"" + coordinate(y.from) + "\" y2=\"" +
             coordinate(y.to) + "\"/>";
      labels += "<text x=\"" + px + "\" y=\"" + coordinate(y.from + 14) +
                "\" text-anchor=\"middle\">" + number(v) + "</text>";
    }
  for (double v : ticks(y)) {
    const std::string py = coordinate(y(v));
    svg += "<line x1=\"" + coordinate(x.from) + "\" x2=\"" + coordinate(x.to) + "\" y1=\"" + py +
           "\" y2=\"" + py + "\"/>";
    labels += "<text x=\"" + coordinate(x.from - 6) + "\" y=\"" + py +
              "\" dy=\"4\" text-anchor=\"end\">" + number(v) + "</text>";
  }
  svg += "</g><rect x=\"" + coordinate(x.from) + "\" y=\"" + coordinate(y.to) + "\" width=\"" +
         coordinate(x.to - x.from) + "\" height=\"" + coordinate(y.from - y.to) +
         "\" fill=\"none\" stroke=\"#666\"/>" + labels + "</g>";
  svg += "<text x=\"" + coordinate((x.from + x.to) / 2) + "\" y=\"" + coordinate(height - 8.0) +
         "\" text-anchor=\"middle\">" + escape(x_label) + "</text>";
  svg += "<text transform=\"translate(14 " + coordinate((y.from + y.to) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_label) + "</text>";
  return svg;
}

// A legend in one row between the title and the plot area, clear of the marks.
std::string legend(const std::vector<std::pair<std::string, int>>& entries, const Scale& x,
                   bool bars) {
  std::string svg;
  double left = x.from;
  const double row = kTop - 10;
  for (const auto& [label, color] : entries) {
    if (label.empty()) continue;
    if (bars)
      svg += "<rect x=\"" + coordinate(left) + "\" y=\"" + coordinate(row - 8) +
             "\" width=\"14\" height=\"9\" fill=\"" + color_of(color) +
             "\" fill-opacity=\"0.5\" stroke=\"" + color_of(color) + "\"/>";
    else
      svg += "<line x1=\"" + coordinate(left) + "\" x2=\"" + coordinate(left + 14) + "\" y1=\"" +
             coordinate(row - 4) + "\" y2=\"" + coordinate(row - 4) + "\" stroke=\"" +
             color_of(color) + "\" stroke-width=\"2\"/>";
    svg += "<text x=\"" + coordinate(left + 18) + "\" y=\"" + coordinate(row) + "\">" +
           escape(label) + "</text>";
    left += 30 + 6.2 * static_cast<double>(label.size());  // about a character's width
  }
  return svg;
}

bool shown(const Axis& axis, double v) { return std::isfinite(v) && (!axis.log || v > 0); }

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) switch (c) {
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
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  return out;
}

std::string chart_svg(const Chart& chart) {
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low, y_low = x_low,
         y_high = -x_low;
  for (const Series& s : chart.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (shown(chart.x, s.x[i]) && shown(chart.y, s.y[i])) {
        x_low = std::min(x_low, s.x[i]);
        x_high = std::max(x_high, s.x[i]);
        y_low = std::min(y_low, s.y[i]);
        y_high = std::max(y_high, s.y[i]);
      }
  if (!(x_low <= x_high))
    throw Error(ErrorCode::InvalidArgument, "plot: chart '" + chart.title + "' has no points");
  Scale x{chart.x.log, 0, 1, kLeft, chart.width - kRight};
  Scale y{chart.y.log, 0, 1, chart.height - kBottom, kTop};
  fit_range(chart.x, x_low, x_high, x.min, x.max);
  fit_range(chart.y, y_low, y_high, y.min, y.max);
  std::string svg = open_svg(chart.width, chart.height, chart.title) +
                    axes(x, y, chart.x.label, chart.y.label, chart.height);
  // Marks outside the range are clipped to the plot area.
  static std::atomic<int> clip_ids{0};
  const std::string clip = "clip" + std::to_string(++clip_ids);
  svg += "<clipPath id=\"" + clip + "\"><rect x=\"" + coordinate(x.from) + "\" y=\"" +
         coordinate(y.to) + "\" width=\"" + coordinate(x.to - x.from) + "\" height=\"" +
         coordinate(y.from - y.to) + "\"/></clipPath><g clip-path=\"url(#" + clip + ")\">";
  std::vector<std::pair<std::string, int>> entries;
  for (const Series& s : chart.series) {
    entries.emplace_back(s.label, s.color);
    const char* color = color_of(s.color);
    std::string points;
    double previous_y = 0;
    bool first = true;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!shown(chart.x, s.x[i]) || !shown(chart.y, s.y[i])) continue;
      const double px = x(s.x[i]), py = y(s.y[i]);
      if (s.style == Style::points || s.style == Style::marked) {
        svg += "<circle cx=\"" + coordinate(px) + "\" cy=\"" + coordinate(py) + "\" r=\"" +
               (s.style == Style::points ? "3.5" : "2.5") + "\" fill=\"" + color + "\"/>";
        if (s.style == Style::points) continue;
      }
      if (s.style == Style::step && !first)
        points += coordinate(px) + "," + coordinate(previous_y) + " ";
      points += coordinate(px) + "," + coordinate(py) + " ";
      previous_y = py;
      first = false;
    }
    if (!points.empty())
      svg += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\"" +
             (s.style == Style::dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + points +
             "\"/>";
  }
  return svg + "</g>" + legend(entries, x, false) + "</svg>";
}

std::string histogram_svg(const Histogram& h) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (const auto& sample : h.samples)
    for (double v : sample)
      if (std::isfinite(v)) {
        low = std::min(low, v);
        high = std::max(high, v);
      }
  if (!(low <= high) || h.bins < 1)
    throw Error(ErrorCode::InvalidArgument, "plot: histogram '" + h.title + "' has no values");
  if (high == low) high = low + std::max(1e-12, std::fabs(low) * 1e-3);
  const double width = (high - low) / h.bins;
  std::vector<std::vector<double>> counts(h.samples.size(), std::vector<double>(h.bins, 0));
  double most = 0;
  for (size_t s = 0; s < h.samples.size(); ++s) {
    for (double v : h.samples[s]) {
      if (!std::isfinite(v)) continue;
      const int bin = std::min(h.bins - 1, static_cast<int>((v - low) / width));
      most = std::max(most, ++counts[s][bin]);
    }
  }
  Scale x{false, low, high, kLeft, h.width - kRight};
  Scale y{false, 0, most * 1.1, h.height - kBottom, kTop};
  std::string svg = open_svg(h.width, h.height, h.title) + axes(x, y, h.x_label, "runs", h.height);
  std::vector<std::pair<std::string, int>> entries;
  for (size_t s = 0; s < counts.size(); ++s) {
    const int color = static_cast<int>(s);
    entries.emplace_back(s < h.labels.size() ? h.labels[s] : "", color);
    svg += "<g fill=\"" + std::string(color_of(color)) + "\" fill-opacity=\"0.45\" stroke=\"" +
           color_of(color) + "\">";
    for (int b = 0; b < h.bins; ++b) {
      if (counts[s][b] == 0) continue;
      const double left = x(low + b * width), right = x(low + (b + 1) * width);
      svg += "<rect x=\"" + coordinate(left) + "\" y=\"" + coordinate(y(counts[s][b])) +
             "\" width=\"" + coordinate(right - left) + "\" height=\"" +
             coordinate(y.from - y(counts[s][b])) + "\"/>";
    }
    svg += "</g>";
  }
  return svg + legend(entries, x, true) + "</svg>";
}

std::string bars_svg(const Bars& b) {
  double most = 0;
  for (const auto& series : b.values)
    for (double v : series)
      if (std::isfinite(v)) most = std::max(most, v);
  if (b.categories.empty() || b.values.empty() || !(most > 0))
    throw Error(ErrorCode::InvalidArgument, "plot: bar chart '" + b.title + "' has no values");
  Scale x{false, 0, static_cast<double>(b.categories.size()), kLeft, b.width - kRight};
  Scale y{false, 0, most * 1.15, b.height - kBottom, kTop};
  std::string svg =
      open_svg(b.width, b.height, b.title) + axes(x, y, "", b.y_label, b.height, /*x_ticks=*/false);
  const double group = x(1) - x(0), bar = group * 0.8 / static_cast<double>(b.values.size());
  std::vector<std::pair<std::string, int>> entries;
  for (size_t s = 0; s < b.values.size(); ++s) {
    const int color = static_cast<int>(s);
    entries.emplace_back(s < b.labels.size() ? b.labels[s] : "", color);
    for (size_t c = 0; c < b.categories.size() && c < b.values[s].size(); ++c) {
      const double v = b.values[s][c];
      if (!(v > 0)) continue;
      const double left = x(static_cast<double>(c)) + group * 0.1 + bar * static_cast<double>(s);
      svg += "<rect x=\"" + coordinate(left) + "\" y=\"" + coordinate(y(v)) + "\" width=\"" +
             coordinate(bar) + "\" height=\"" + coordinate(y.from - y(v)) + "\" fill=\"" +
             color_of(color) + "\"><title>" + escape(entries.back().first) + " " +
             escape(b.categories[c]) + ": " + number(v) + "</title></rect>";
    }
  }
  for (size_t c = 0; c < b.categories.size(); ++c)
    svg += "<text x=\"" + coordinate(x(c + 0.5)) + "\" y=\"" + coordinate(y.from + 14) +
           "\" text-anchor=\"middle\">" + escape(b.categories[c]) + "</text>";
  return svg + legend(entries, x, true) + "</svg>";
}

Series cdf_series(std::string label, std::vector<double> sample, int color) {
  std::sort(sample.begin(), sample.end());
  Series s{std::move(label), {}, {}, Style::step, color};
  for (size_t i = 0; i < sample.size(); ++i) {
    s.x.push_back(sample[i]);
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(sample.size()));
  }
  return s;
}

}  // namespace hal::tool::plot
