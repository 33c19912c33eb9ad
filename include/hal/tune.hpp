// Auto-tuning of hal's own device kernels (`hal tune`, docs/tuning.md): for each op x dtype x
// shape class, search the kernel's parameters on the device, check every candidate's result
// against cpu:0 before it may win, and keep the fastest in the tuning cache (one file per
// device, keyed by device UUID, driver version, hal version and the kernels' hash; a change to
// any of them makes the file stale). Ops on the device then use the tuned parameters of the
// nearest class, and matmul picks per class between the vendor BLAS and hal's kernel, whichever
// measured faster.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "hal/device.hpp"

namespace hal {

struct TuneShape {  // a matmul [m, k] x [k, n]; reductions read `m` as the element count
  int64_t m = 0, n = 0, k = 0;
};

struct TuneOptions {
  std::vector<std::string> ops{"matmul", "reduce"};  // "matmul", "reduce"
  // matmul shapes (empty: 256^3, 1024^3, 2048^3); reductions: element counts of a full f32 sum
  // (empty: 2^20, 2^26).
  std::vector<TuneShape> matmul_shapes;
  std::vector<int64_t> reduce_counts;
  // The whole search's wall time; a class whose search it cuts short keeps the best found so
  // far (at least the default, always measured first).
  std::chrono::milliseconds budget{60000};
  // At most this many candidates per class (0: all); tests keep it small.
  int max_candidates = 0;
  bool retune = false;  // search again for classes the cache already holds
};

struct TuneEntry {
  std::string op, dtype, shape_class;
  std::string choice;  // "hal" or the vendor BLAS that measured faster ("CLBlast")
  std::string params;  // the winning parameters of hal's kernel
  double hal_ms = 0, default_ms = 0, vendor_ms = 0;   // best times; 0 where not measured
  int candidates_tried = 0, candidates_rejected = 0;  // rejected: wrong result or failed
  bool from_cache = false;                            // found in the cache, not searched
};

struct TuneReport {
  // cache_file: where the tuning was kept; empty when it was not (no cache directory, or one
  // that cannot be written), with the reason in cache_problem. The process that tuned uses the
  // tuning either way.
  std::string device, cache_file, cache_problem;
  std::vector<TuneEntry> entries;
  double seconds = 0;
  bool budget_exhausted = false;
};

// Throws InvalidArgument for an unknown op or a non-positive size, Unsupported for a device that
// compiles no portable kernels.
TuneReport tune(const Device& device, const TuneOptions& options = {});

}  // namespace hal
