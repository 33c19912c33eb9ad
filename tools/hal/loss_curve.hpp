// A loss curve as a standalone SVG document (no library): the points joined by a line over
// labelled axes.
#pragma once

#include <string>
#include <vector>

namespace hal::tool {

struct CurvePoint {
  double x = 0;  // epochs, fractional
  double y = 0;  // the mean loss since the last point
};

std::string loss_curve_svg(const std::vector<CurvePoint>& points, const std::string& title);

}  // namespace hal::tool
