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

// Runs the candidate once untimed and checks its result, then times it: the best of a few runs
// in milliseconds, or -1 when it failed or was wrong. The untimed run builds the kernel (and
// PoCL compiles again at a kernel's first launch), which took many times the run itself: timed,
// it made every candidate but the default, whose kernel ops had built before, look too slow to
// time. One whose first timed run takes over three times the best so far cannot win and is not
// timed further.
double measure(const Candidate& candidate, const std::function<void()>& reset,
               const std::function<bool()>& correct, Stream& stream, double best_ms) {
  try {
    reset();
    stream.synchronize();
    candidate.run();
    stream.synchronize();
    if (!correct()) {
      log(LogLevel::warn, "hal tune: " + candidate.text + " gives a wrong result: rejected");
      return -1;
    }
    double fastest = 0;
    const Clock::time_point timing = Clock::now();
    for (int i = 0; i < 6 && (i < 3 || seconds_since(timing) < 0.3); ++i) {
      const Clock::time_point start = Clock::now();
      candidate.run();
      stream.synchronize();
      const double ms = seconds_since(start) * 1e3;
      fastest = i == 0 ? ms : std::min(fastest, ms);
      if (i == 0 && best_ms > 0 && ms > 3 * best_ms) break;
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
