#include "ops/shape_class.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>

namespace hal::ops {
namespace {

// The words of a class, each split into its letters and its trailing number ("m2048" ->
// ("m", 2048); a word without a trailing number has size 0). Views into `text`, no allocation
// beyond the vector: ops look classes up on every call.
struct Word {
  std::string_view name;
  double size = 0;
};
std::vector<Word> words(std::string_view text) {
  std::vector<Word> out;
  size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    size_t end = at;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    if (end == at) break;
    const std::string_view word = text.substr(at, end - at);
    size_t digits = word.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(word[digits - 1]))) --digits;
    Word parsed{word.substr(0, digits), 0};
    if (digits < word.size()) {
      uint64_t number = 0;
      std::from_chars(word.data() + digits, word.data() + word.size(), number);
      parsed.size = static_cast<double>(number);
    }
    out.push_back(parsed);
    at = end;
  }
  return out;
}

}  // namespace

uint64_t class_size(uint64_t value) {
  uint64_t size = 1;
  while (size < value && size < (uint64_t{1} << 62)) size *= 2;
  return size;
}

double class_distance(const std::string& a, const std::string& b) {
  const std::vector<Word> x = words(a), y = words(b);
  double distance =
      4.0 * static_cast<double>(x.size() > y.size() ? x.size() - y.size() : y.size() - x.size());
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    const auto [x_name, x_size] = x[i];
    const auto [y_name, y_size] = y[i];
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
