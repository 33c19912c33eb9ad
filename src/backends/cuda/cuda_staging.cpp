#include "backends/cuda/cuda_staging.hpp"

#include <bit>

namespace hal::cuda {
namespace {

constexpr size_t kMinBlockBytes = size_t{4} << 10;
// What the pool keeps between copies; a larger block is pinned for its copy and freed after.
constexpr size_t kMaxKeptBytes = size_t{64} << 20;

}  // namespace

PinnedStaging::PinnedStaging(std::shared_ptr<const CuApi> api, std::string device_name)
    : api_(std::move(api)), device_name_(std::move(device_name)) {}

PinnedStaging::~PinnedStaging() {
  if (!context_ || api_->cuCtxSetCurrent(context_) != CUDA_SUCCESS) return;  // driver gone
  for (auto& [size, blocks] : free_) free_blocks(blocks);
  free_blocks(surplus_);
}

void PinnedStaging::free_blocks(std::vector<void*>& blocks) {
  for (void* block : blocks) api_->cuMemFreeHost(block);
  blocks.clear();
}

std::shared_ptr<void> PinnedStaging::take(size_t bytes) {
  const size_t size = std::bit_ceil(std::max(bytes, kMinBlockBytes));
  void* block = nullptr;
  {
    std::vector<void*> surplus;
    {
      std::lock_guard lock(mutex_);
      if (!context_) api_->cuCtxGetCurrent(&context_);
      surplus.swap(surplus_);
      if (auto found = free_.find(size); found != free_.end() && !found->second.empty()) {
        block = found->second.back();
        found->second.pop_back();
        kept_bytes_ -= size;
      }
    }
    free_blocks(surplus);
  }
  if (!block) {
    const CUresult result = api_->cuMemHostAlloc(&block, size, CU_MEMHOSTALLOC_PORTABLE);
    if (result == CUDA_ERROR_OUT_OF_MEMORY)
      throw Error(ErrorCode::OutOfMemory,
                  device_name_ + ": staging a copy of pageable memory: the driver cannot pin " +
                      std::to_string(size) + " more bytes of host memory",
                  result);
    api_->check(result, device_name_, "cuMemHostAlloc (staging of pageable memory)");
  }
  return std::shared_ptr<void>(block, [pool = shared_from_this(), size](void* returned) {
    pool->give_back(returned, size);
  });
}

void PinnedStaging::give_back(void* block, size_t size) {
  std::lock_guard lock(mutex_);
  if (kept_bytes_ + size > kMaxKeptBytes) {
    surplus_.push_back(block);
    return;
  }
  free_[size].push_back(block);
  kept_bytes_ += size;
}

bool PinnedStaging::pinned(const void* pointer) const {
  // cuPointerGetAttributes rather than cuMemHostGetFlags or cuPointerGetAttribute: it answers
  // for memory the driver does not know (zeros) where those fail, a failure compute-sanitizer
  // reports as an error of the program. Managed memory is staged, as any other not pinned.
  unsigned int type = 0, managed = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* values[] = {&type, &managed};
  return api_->cuPointerGetAttributes(2, attributes, values,
                                      reinterpret_cast<CUdeviceptr>(pointer)) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_HOST && !managed;
}

}  // namespace hal::cuda
