// Built without the CUDA toolkit: no CUDA baseline.
#include "raw_baseline.hpp"

namespace hal::bench {

std::unique_ptr<RawBaseline> make_cuda_baseline(size_t) { return nullptr; }

}  // namespace hal::bench
