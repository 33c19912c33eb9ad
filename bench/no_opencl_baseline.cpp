// Built without the OpenCL headers: no OpenCL baseline.
#include "raw_baseline.hpp"

namespace hal::bench {

std::unique_ptr<RawBaseline> make_opencl_baseline(size_t) { return nullptr; }

}  // namespace hal::bench
