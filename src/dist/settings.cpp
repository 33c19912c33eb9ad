#include "dist/settings.hpp"

#include <cstdlib>
#include <string>

#include "core/text.hpp"
#include "hal/dist.hpp"
#include "hal/error.hpp"
#include "hal/units.hpp"

namespace hal::dist {

double timeout_seconds() {
  const char* text = std::getenv("HAL_DIST_TIMEOUT");
  if (text == nullptr || *text == '\0') return 60.0;
  // Up to a week: past that a wait is a hang by another name.
  const Parsed<double> parsed = parse_real("HAL_DIST_TIMEOUT", text, 1e-3, 7 * 24 * 3600.0);
  if (!parsed.value) throw Error(ErrorCode::InvalidArgument, parsed.error + " (seconds)");
  return *parsed.value;
}

namespace detail {

DebugLevel debug_level() {
  const char* text = std::getenv("HAL_DIST_DEBUG");
  if (text == nullptr || *text == '\0') return DebugLevel::check;
  const std::string value = hal::detail::to_lower(hal::detail::trim(text));
  if (value == "off" || value == "0") return DebugLevel::off;
  if (value == "check" || value == "1") return DebugLevel::check;
  if (value == "detail" || value == "2") return DebugLevel::detail;
  throw Error(ErrorCode::InvalidArgument,
              std::string("HAL_DIST_DEBUG: '") + text + "' is not off, check or detail");
}

std::optional<AllReduceAlgorithm> forced_local_algorithm() {
  const char* text = std::getenv("HAL_DIST_LOCAL_ALGORITHM");
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string value = hal::detail::to_lower(hal::detail::trim(text));
  if (value == "auto") return std::nullopt;
  if (value == "ring") return AllReduceAlgorithm::ring;
  if (value == "tree") return AllReduceAlgorithm::tree;
  throw Error(ErrorCode::InvalidArgument,
              std::string("HAL_DIST_LOCAL_ALGORITHM: '") + text + "' is not auto, ring or tree");
}

Clock::duration timeout() {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(timeout_seconds()));
}

std::optional<Clock::duration> finalize_timeout() {
  const char* text = std::getenv("HAL_DIST_FINALIZE_TIMEOUT");
  if (text == nullptr) return std::nullopt;
  const std::string value = hal::detail::to_lower(hal::detail::trim(text));
  if (value.empty() || value == "none") return std::nullopt;
  const Parsed<double> parsed =
      parse_real("HAL_DIST_FINALIZE_TIMEOUT", value, 1e-3, 7 * 24 * 3600.0);
  if (!parsed.value) throw Error(ErrorCode::InvalidArgument, parsed.error + " (seconds, or none)");
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*parsed.value));
}

int64_t mpi_max_elements() {
  constexpr uint64_t kMpiCountMax = 2147483647;  // INT_MAX: MPI's counts are int
  const char* text = std::getenv("HAL_DIST_MPI_MAX_ELEMENTS");
  if (text == nullptr || *text == '\0') return static_cast<int64_t>(kMpiCountMax);
  const Parsed<uint64_t> parsed =
      parse_count("HAL_DIST_MPI_MAX_ELEMENTS", hal::detail::trim(text), 1, kMpiCountMax);
  if (!parsed.value) throw Error(ErrorCode::InvalidArgument, parsed.error + " (elements)");
  return static_cast<int64_t>(*parsed.value);
}

}  // namespace detail
}  // namespace hal::dist
