#include "hal/units.hpp"

#include <cmath>
#include <cstdio>

#include "hal/device_info.hpp"

namespace hal {

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string format_memory(const MemoryFigure& figure) {
  return figure.provenance == Provenance::unknown ? "unknown" : format_bytes(figure.bytes);
}

std::string format_seconds(double seconds) {
  char text[32];
  if (std::isnan(seconds)) return "unknown";
  if (seconds >= 1e5)  // past a day: fixed notation would run to dozens of digits
    std::snprintf(text, sizeof text, "%.2g s", seconds);
  else if (seconds >= 1.0)
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  else if (seconds >= 1e-6)
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  else
    std::snprintf(text, sizeof text, "%.0f ns", seconds * 1e9);
  return text;
}

}  // namespace hal
