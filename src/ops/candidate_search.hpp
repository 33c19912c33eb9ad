// The tuner's search over one class's candidates: each runs once untimed (which builds its
// kernel) and its result is checked (against cpu:0's, by the caller's `correct`) before it is
// timed, so a wrong candidate never wins however fast it is, and the time to build one never
// counts against it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hal/stream.hpp"

namespace hal::ops {

struct Candidate {
  std::string text;           // its parameters, as the tuning cache stores them
  std::function<void()> run;  // enqueues the work on the search's stream
};

struct SearchOutcome {
  int best = -1;                       // index of the fastest correct candidate; -1: none was
  double best_ms = 0, default_ms = 0;  // default: candidate 0, 0 when it failed
  int tried = 0, rejected = 0;         // rejected: threw, or gave a wrong result
  bool cut_short = false;              // `seconds` ran out before the last candidate
};

// Candidate 0 (the default) always, the others while `seconds` last and up to `max_candidates`
// (0: all). `reset` enqueues what makes a run that writes nothing fail (NaNs in the output)
// before each checked run; `correct` reads the result that run left.
SearchOutcome search_candidates(const std::vector<Candidate>& candidates,
                                const std::function<void()>& reset,
                                const std::function<bool()>& correct, Stream& stream,
                                double seconds, int max_candidates);

}  // namespace hal::ops
