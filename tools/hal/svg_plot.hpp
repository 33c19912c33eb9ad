// A small plotting layer for hal report's pages: charts as inline SVG text (no script, no
// fonts or files fetched), with linear or log axes, ticks and a legend. Used by
// report_html.cpp; each chart is a figure of its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hal::tool::plot {

// Text for SVG or HTML: &, <, >, " and ' escaped.
std::string escape(std::string_view text);

struct Axis {
  std::string label;
  bool log = false;
  // The range shown; NaN: from the data (with a margin; a log axis snaps to decades).
  double min = 0.0 / 0.0, max = 0.0 / 0.0;
};

// marked: a line with a dot at each point (a series of one point is still seen).
enum class Style { line, marked, dashed, step, points };

struct Series {
  std::string label;  // in the legend; empty: not listed
  std::vector<double> x, y;
  Style style = Style::line;
  int color = 0;  // an index into the palette
};

struct Chart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  int width = 520, height = 320;
};

// An x-y chart: lines, dashed lines, steps (an empirical CDF) or points. Points outside a log
// axis's range (zero or negative) are left out. InvalidArgument when no series has a point.
std::string chart_svg(const Chart& chart);

// Histograms of several samples over shared bins (`bins` of equal width between the smallest
// and largest value), drawn as outlined, translucent bars, one colour a sample.
struct Histogram {
  std::string title;
  std::string x_label;
  std::vector<std::string> labels;
  std::vector<std::vector<double>> samples;
  int bins = 20;
  int width = 520, height = 320;
};
std::string histogram_svg(const Histogram& histogram);

// Grouped bars: one group per category, one bar per series in it.
struct Bars {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<std::string> labels;          // the series
  std::vector<std::vector<double>> values;  // values[series][category]
  int width = 520, height = 320;
};
std::string bars_svg(const Bars& bars);

// The empirical CDF of `sample` as a step series: x sorted, y from 1/n to 1.
Series cdf_series(std::string label, std::vector<double> sample, int color);

}  // namespace hal::tool::plot
