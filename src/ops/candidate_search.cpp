#include "ops/candidate_search.hpp"

#include <algorithm>
#include <chrono>

#include "hal/error.hpp"
#include "hal/log.hpp"

namespace hal::ops {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs the candidate once (compiling it) and checks the result, then times it: the best of a
// few runs in milliseconds, or -1 when it failed or was wrong. One whose checked run already
// takes over three times the best so far cannot win and is not timed further.
double measure(const Candidate& candidate, const std::function<void()>& reset,
               const std::function<bool()>& correct, Stream& stream, double best_ms) {
  try {
    reset();
    stream.synchronize();
    const Clock::time_point first = Clock::now();
    candidate.run();
    stream.synchronize();
    const double first_ms = seconds_since(first) * 1e3;
    if (!correct()) {
      log(LogLevel::warn, "hal tune: " + candidate.text + " gives a wrong result: rejected");
      return -1;
    }
    if (best_ms > 0 && first_ms > 3 * best_ms) return first_ms;
    double fastest = first_ms;
    const Clock::time_point timing = Clock::now();
    for (int i = 0; i < 5 && (i < 2 || seconds_since(timing) < 0.3); ++i) {
      const Clock::time_point start = Clock::now();
      candidate.run();
      stream.synchronize();
      fastest = std::min(fastest, seconds_since(start) * 1e3);
    }
    return fastest;
  } catch (const Error& error) {
    log(LogLevel::warn, "hal tune: " + candidate.text + " failed: " + error.what());
    return -1;
  }
}

}  // namespace

SearchOutcome search_candidates(const std::vector<Candidate>& candidates,
                                const std::function<void()>& reset,
                                const std::function<bool()>& correct, Stream& stream,
                                double seconds, int max_candidates) {
  SearchOutcome out;
  const Clock::time_point start = Clock::now();
  size_t count = candidates.size();
  if (max_candidates > 0) count = std::min(count, static_cast<size_t>(max_candidates));
  for (size_t i = 0; i < count; ++i) {
    if (i > 0 && seconds_since(start) >= seconds) {
      out.cut_short = true;
      break;
    }
    const double ms = measure(candidates[i], reset, correct, stream, out.best_ms);
    ++out.tried;
    if (ms < 0) {
      ++out.rejected;
      continue;
    }
    if (i == 0) out.default_ms = ms;
    if (out.best < 0 || ms < out.best_ms) {
      out.best = static_cast<int>(i);
      out.best_ms = ms;
    }
  }
  return out;
}

}  // namespace hal::ops
