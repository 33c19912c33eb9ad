// NVTX ranges for Nsight Systems: while a trace records, each span on the track of a CUDA
// stream is also an NVTX range on the calling thread (nvtxRangePushA / nvtxRangePop), so that
// hal's ops, launches and copies appear beside the CUDA API calls they issue. libnvToolsExt is
// opened at run time (HAL_NVTX_LIBRARY names another file); without it nothing happens.
// HAL_NVTX=all marks the spans of every backend's streams, not only CUDA's.
#pragma once

#include <string_view>

namespace hal::trace::detail {

// Whether spans on a stream of `backend` ("cuda", ...) become NVTX ranges: libnvToolsExt
// opened, and the backend CUDA (or HAL_NVTX=all).
bool nvtx_ranges_for(std::string_view backend);

void nvtx_push(std::string_view name);
void nvtx_pop();

}  // namespace hal::trace::detail
