// The on-disk kernel cache on its own: round trips, and every kind of damaged entry refused.
#include "core/kernel_disk_cache.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace hal::detail {
namespace {

namespace fs = std::filesystem;

class KernelDiskCacheTest : public ::testing::Test {
 protected:
  KernelDiskCacheTest()
      : root_(fs::temp_directory_path() / ("hal-disk-cache-" + std::to_string(::getpid()) + "-" +
                                           std::to_string(std::random_device{}()))),
        cache_("test", root_) {}
  ~KernelDiskCacheTest() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  // Stores `payload` under `key`, rewrites the entry's bytes with `edit`, then loads.
  std::optional<KernelDiskCache::Bytes> load_after(const std::function<void(std::string&)>& edit) {
    cache_.store(key_, payload_);
    const fs::path path = cache_.entry_path(key_);
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    edit(bytes);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return cache_.load(key_);
  }

  fs::path root_;
  KernelDiskCache cache_;
  const std::string key_ = "device: x\nsource:\nkernel void k() {}";
  const KernelDiskCache::Bytes payload_{1, 2, 3, 250, 0, 7};
};

TEST_F(KernelDiskCacheTest, StoresAndLoadsUnderTheBackendsFolder) {
  EXPECT_FALSE(cache_.load(key_));
  cache_.store(key_, payload_);
  EXPECT_EQ(cache_.load(key_), payload_);
  EXPECT_EQ(cache_.entry_path(key_).parent_path(), root_ / "kernels" / "test");
  EXPECT_FALSE(cache_.load(key_ + " "));  // another key
  cache_.remove(key_);
  EXPECT_FALSE(cache_.load(key_));
}

TEST_F(KernelDiskCacheTest, DamagedEntriesAreRefusedAndRemoved) {
  const std::vector<std::pair<const char*, std::function<void(std::string&)>>> damages = {
      {"flipped payload byte", [](std::string& b) { b.back() ^= 1; }},
      {"truncated", [](std::string& b) { b.resize(b.size() - 2); }},
      {"trailing bytes", [](std::string& b) { b += "xx"; }},
      {"bad magic", [](std::string& b) { b[0] = 'X'; }},
      {"key of another", [](std::string& b) { b[8 + 8] ^= 1; }},
      {"empty", [](std::string& b) { b.clear(); }},
      {"huge key length", [](std::string& b) { b[8 + 7] = '\x7f'; }},
  };
  for (const auto& [name, damage] : damages) {
    EXPECT_FALSE(load_after(damage)) << name;
    EXPECT_FALSE(fs::exists(cache_.entry_path(key_))) << name << ": the entry was kept";
  }
}

TEST_F(KernelDiskCacheTest, WithoutARootNothingIsReadOrWritten) {
  KernelDiskCache disabled("test", fs::path());
  EXPECT_FALSE(disabled.enabled());
  disabled.store(key_, payload_);
  EXPECT_FALSE(disabled.load(key_));
}

TEST_F(KernelDiskCacheTest, AnUnwritableFolderIsNotAnError) {
  const fs::path blocker = root_ / "file";
  fs::create_directories(root_);
  std::ofstream(blocker) << "not a folder";
  KernelDiskCache cache("test", blocker);  // kernels/ cannot be made under a file
  cache.store(key_, payload_);
  EXPECT_FALSE(cache.load(key_));
}

TEST(CacheRoot, FollowsHalCacheDirThenXdgThenHome) {
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  const auto old_hal = saved("HAL_CACHE_DIR"), old_xdg = saved("XDG_CACHE_HOME");
  ::setenv("HAL_CACHE_DIR", "/tmp/hal-x", 1);
  EXPECT_EQ(cache_root(), fs::path("/tmp/hal-x"));
  ::unsetenv("HAL_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(cache_root(), fs::path("/tmp/xdg/hal"));
  ::unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME")) {
    EXPECT_EQ(cache_root(), fs::path(home) / ".cache" / "hal");
  }
  if (old_hal) ::setenv("HAL_CACHE_DIR", old_hal->c_str(), 1);
  if (old_xdg) ::setenv("XDG_CACHE_HOME", old_xdg->c_str(), 1);
}

}  // namespace
}  // namespace hal::detail
