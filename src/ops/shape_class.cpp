#include "ops/shape_class.hpp"

#include <cctype>
#include <cmath>
#include <sstream>

namespace hal::ops {
namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// "m2048" -> ("m", 2048); a word without a trailing number has size 0.
std::pair<std::string, double> split_word(const std::string& word) {
  size_t digits = word.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(word[digits - 1]))) --digits;
  if (digits == word.size()) return {word, 0};
  return {word.substr(0, digits), std::stod(word.substr(digits))};
}

}  // namespace

uint64_t class_size(uint64_t value) {
  uint64_t size = 1;
  while (size < value && size < (uint64_t{1} << 62)) size *= 2;
  return size;
}

double class_distance(const std::string& a, const std::string& b) {
  const std::vector<std::string> x = words(a), y = words(b);
  double distance =
      4.0 * static_cast<double>(x.size() > y.size() ? x.size() - y.size() : y.size() - x.size());
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    const auto [x_name, x_size] = split_word(x[i]);
    const auto [y_name, y_size] = split_word(y[i]);
    if (x_name != y_name)
      distance += 4;
    else if (x_size > 0 && y_size > 0)
      distance += std::fabs(std::log2(x_size) - std::log2(y_size));
    else if (x_size != y_size)
      distance += 4;
  }
  return distance;
}

const TuneEntry* nearest_entry(const TuningTable& table, const std::string& op,
                               const std::string& dtype, const std::string& shape_class) {
  const TuneEntry* best = nullptr;
  double best_distance = 0;
  for (const TuneEntry& entry : table.entries) {
    if (entry.op != op || entry.dtype != dtype) continue;
    const double distance = class_distance(entry.shape_class, shape_class);
    if (!best || distance < best_distance) {
      best = &entry;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace hal::ops
