// Brief spinning before blocking: a worker that was just busy usually gets its next task within
// microseconds, and a futex sleep and wake costs more than that.
#pragma once

#include <chrono>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hal::async {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

inline constexpr std::chrono::microseconds kSpinBudget{20};

// Spins until `done()` or the budget runs out; returns done(). After a short burst of pauses it
// yields, so that when threads outnumber cores the one with work to do gets to run.
template <class Predicate>
bool spin_until(Predicate done, std::chrono::microseconds budget = kSpinBudget) {
  if (done()) return true;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    if (i < 64)
      cpu_relax();
    else
      std::this_thread::yield();
    if (done()) return true;
    if ((i & 15) == 0 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace hal::async
