#include "loss_curve.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hal::tool {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string loss_curve_svg(const std::vector<CurvePoint>& points, const std::string& title) {
  constexpr double kWidth = 640, kHeight = 400, kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;
  double x_max = 1, y_max = 0;
  for (const CurvePoint& p : points) {
    x_max = std::max(x_max, p.x);
    if (std::isfinite(p.y)) y_max = std::max(y_max, p.y);
  }
  if (y_max <= 0) y_max = 1;
  const auto sx = [&](double x) { return kLeft + x / x_max * (kWidth - kLeft - kRight); };
  const auto sy = [&](double y) {
    return kHeight - kBottom - y / y_max * (kHeight - kTop - kBottom);
  };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kWidth) +
                    "\" height=\"" + number(kHeight) + "\" font-family=\"sans-serif\" " +
                    "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + number(kWidth / 2) +
         "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" + escaped(title) + "</text>\n";
  // Axes, with five ticks each.
  svg += "<path d=\"M" + number(kLeft) + " " + number(kTop) + " V" + number(kHeight - kBottom) +
         " H" + number(kWidth - kRight) + "\" stroke=\"black\" fill=\"none\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double x = x_max * i / 5, y = y_max * i / 5;
    svg += "<text x=\"" + number(sx(x)) + "\" y=\"" + number(kHeight - kBottom + 18) +
           "\" text-anchor=\"middle\">" + number(x) + "</text>\n";
    svg += "<text x=\"" + number(kLeft - 8) + "\" y=\"" + number(sy(y) + 4) +
           "\" text-anchor=\"end\">" + number(y) + "</text>\n";
    svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kWidth - kRight) + "\" y1=\"" +
           number(sy(y)) + "\" y2=\"" + number(sy(y)) + "\" stroke=\"#ddd\"/>\n";
  }
  svg += "<text x=\"" + number(kWidth / 2) + "\" y=\"" + number(kHeight - 12) +
         "\" text-anchor=\"middle\">epoch</text>\n";
  svg += "<text x=\"16\" y=\"" + number(kHeight / 2) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + number(kHeight / 2) +
         ")\">training loss</text>\n";
  std::string path;
  for (const CurvePoint& p : points) {
    if (!std::isfinite(p.y)) continue;
    path += (path.empty() ? "M" : " L") + number(sx(p.x)) + " " + number(sy(p.y));
  }
  if (!path.empty())
    svg += "<path d=\"" + path + "\" stroke=\"#1f77b4\" stroke-width=\"2\" fill=\"none\"/>\n";
  return svg + "</svg>\n";
}

}  // namespace hal::tool
