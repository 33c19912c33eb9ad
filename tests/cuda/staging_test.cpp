// The pinned staging pool of CUDA copies from and to pageable memory, against a stand-in for the
// driver's five calls it makes (pinning is malloc, "is it pinned" a lookup), so that its reuse,
// its cap, its errors and its thread safety are tested without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_staging.hpp"
#include "hal/error.hpp"

namespace hal::cuda {
namespace {

// What the stand-in driver has pinned, and how often it was asked to.
struct FakeDriver {
  std::mutex mutex;
  std::set<void*> pinned;
  size_t allocations = 0, frees = 0;
  size_t refuse_above = SIZE_MAX;  // cuMemHostAlloc runs out of memory above this size
};
FakeDriver* g_driver = nullptr;

std::shared_ptr<const CuApi> fake_api() {
  auto api = std::make_shared<CuApi>();
  api->cuMemHostAlloc = [](void** out, size_t bytes, unsigned int) -> CUresult {
    std::lock_guard lock(g_driver->mutex);
    if (bytes > g_driver->refuse_above) return CUDA_ERROR_OUT_OF_MEMORY;
    *out = std::malloc(bytes);
    g_driver->pinned.insert(*out);
    ++g_driver->allocations;
    return CUDA_SUCCESS;
  };
  api->cuMemFreeHost = [](void* block) -> CUresult {
    std::lock_guard lock(g_driver->mutex);
    if (g_driver->pinned.erase(block) == 0) return CUDA_ERROR_INVALID_VALUE;
    std::free(block);
    ++g_driver->frees;
    return CUDA_SUCCESS;
  };
  // As the driver's: zeros, not an error, for memory it does not know.
  api->cuPointerGetAttributes = [](unsigned int count, CUpointer_attribute* attributes,
                                   void** values, CUdeviceptr pointer) -> CUresult {
    std::lock_guard lock(g_driver->mutex);
    const bool pinned = g_driver->pinned.count(reinterpret_cast<void*>(pointer)) > 0;
    for (unsigned int i = 0; i < count; ++i)
      *static_cast<unsigned int*>(values[i]) =
          pinned && attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ? CU_MEMORYTYPE_HOST : 0;
    return CUDA_SUCCESS;
  };
  api->cuCtxGetCurrent = [](CUcontext* context) -> CUresult {
    *context = reinterpret_cast<CUcontext>(g_driver);
    return CUDA_SUCCESS;
  };
  api->cuCtxSetCurrent = [](CUcontext) -> CUresult { return CUDA_SUCCESS; };
  api->cuGetErrorName = [](CUresult, const char** name) -> CUresult {
    *name = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
  };
  api->cuGetErrorString = [](CUresult, const char** text) -> CUresult {
    *text = "fake";
    return CUDA_SUCCESS;
  };
  return api;
}

class StagingTest : public ::testing::Test {
 protected:
  void SetUp() override { g_driver = &driver; }
  void TearDown() override { g_driver = nullptr; }
  std::shared_ptr<PinnedStaging> pool() {
    return std::make_shared<PinnedStaging>(fake_api(), "cuda:0 (fake)");
  }
  FakeDriver driver;
};

TEST_F(StagingTest, BlocksOfOneSizeClassAreReused) {
  auto staging = pool();
  void* first = nullptr;
  {
    std::shared_ptr<void> block = staging->take(5000);  // an 8 KiB block
    first = block.get();
    EXPECT_TRUE(staging->pinned(first));
    std::memset(first, 1, 8192);  // the whole class is usable
  }
  std::shared_ptr<void> again = staging->take(8192);
  EXPECT_EQ(again.get(), first) << "a returned block of the same class was not reused";
  std::shared_ptr<void> other = staging->take(100);  // 4 KiB, a class of its own
  EXPECT_NE(other.get(), first);
  EXPECT_EQ(driver.allocations, 2u);
  int on_the_stack = 0;
  std::vector<char> on_the_heap(64);
  EXPECT_FALSE(staging->pinned(&on_the_stack));
  EXPECT_FALSE(staging->pinned(on_the_heap.data()));
}

TEST_F(StagingTest, KeepsAtMostItsCapAndFreesTheRest) {
  auto staging = pool();
  {
    std::shared_ptr<void> a = staging->take(size_t{48} << 20);  // 64 MiB blocks
    std::shared_ptr<void> b = staging->take(size_t{40} << 20);
  }  // one is kept (64 MiB, the cap), the other is surplus
  EXPECT_EQ(driver.frees, 0u) << "a block was freed where the caller dropped it";
  std::shared_ptr<void> small = staging->take(4096);  // frees the surplus
  EXPECT_EQ(driver.frees, 1u);
  std::shared_ptr<void> kept = staging->take(size_t{33} << 20);
  EXPECT_EQ(driver.allocations, 3u) << "the kept 64 MiB block was not reused";
  kept.reset();
  small.reset();
  staging.reset();
  EXPECT_EQ(driver.frees, driver.allocations) << "the pool's destruction left blocks pinned";
  EXPECT_TRUE(driver.pinned.empty());
}

TEST_F(StagingTest, ABlockOutlivesThePoolThatLentIt) {
  auto staging = pool();
  std::shared_ptr<void> block = staging->take(4096);
  staging.reset();  // the block holds the pool
  EXPECT_EQ(driver.frees, 0u);
  block.reset();
  EXPECT_EQ(driver.frees, 1u);
}

TEST_F(StagingTest, RefusalToPinNamesTheDeviceAndTheSize) {
  driver.refuse_above = size_t{1} << 20;
  auto staging = pool();
  try {
    staging->take(size_t{3} << 20);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::OutOfMemory);
    EXPECT_NE(error.message().find("cuda:0 (fake)"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("4194304 more bytes"), std::string::npos) << error.message();
  }
  EXPECT_NE(staging->take(4096), nullptr) << "the pool does not work after a refusal";
}

// Many threads take and drop blocks of a few sizes: no block is lent twice at once, and every
// block pinned is freed once the pool is gone.
TEST_F(StagingTest, ManyThreadsTakeAndDropBlocks) {
  auto staging = pool();
  constexpr int kThreads = 8, kRounds = 2000;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t bytes = size_t{4096} << (round % 3);
        std::shared_ptr<void> block = staging->take(bytes);
        auto* bytes_of = static_cast<unsigned char*>(block.get());
        std::memset(bytes_of, t + 1, bytes);
        for (size_t i = 0; i < bytes; i += 512) failures[t] += bytes_of[i] != t + 1;
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_LE(driver.allocations, size_t{kThreads} * 3) << "blocks were not reused";
  staging.reset();
  EXPECT_EQ(driver.frees, driver.allocations);
}

}  // namespace
}  // namespace hal::cuda
