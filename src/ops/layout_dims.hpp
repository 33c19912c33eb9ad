// The dimensions of an op's layout, inline up to four (merging leaves most tensors fewer; more
// spill to the heap): laying out a tiny op allocates nothing.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>

namespace hal::ops {

using LayoutDims = boost::container::small_vector<int64_t, 4>;

}  // namespace hal::ops
