// The on-disk kernel cache on its own: round trips, every kind of damaged entry refused, and
// the size cap's pruning of the least recently used entries.
#include "core/kernel_disk_cache.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "test_util.hpp"

namespace hal::detail {
namespace {

namespace fs = std::filesystem;

class KernelDiskCacheTest : public ::testing::Test {
 protected:
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

  test::ScratchDir scratch_{"hal-disk-cache", test::ScratchDir::Made::no};
  fs::path root_ = scratch_.path();
  KernelDiskCache cache_{"test", root_};
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

// Sets an entry's last use `seconds` ago.
void age(const fs::path& path, int seconds) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::seconds(seconds));
}

TEST_F(KernelDiskCacheTest, TheLeastRecentlyUsedEntriesGoWhenTheCapIsPassed) {
  const KernelDiskCache::Bytes payload(1000, 7);
  const KernelDiskCache probe("test", root_);
  probe.store("a", payload);
  const uint64_t entry_bytes = fs::file_size(probe.entry_path("a"));
  // Room for two entries and a half, across backends.
  const KernelDiskCache one("one", root_, entry_bytes * 5 / 2),
      two("two", root_, entry_bytes * 5 / 2);
  fs::remove(probe.entry_path("a"));
  one.store("a", payload);
  two.store("b", payload);
  age(one.entry_path("a"), 100);
  age(two.entry_path("b"), 50);
  ASSERT_TRUE(one.load("a"));  // used now: b is the least recently used
  one.store("c", payload);     // three entries: over the cap
  EXPECT_TRUE(fs::exists(one.entry_path("a")));
  EXPECT_FALSE(fs::exists(two.entry_path("b")));
  EXPECT_TRUE(fs::exists(one.entry_path("c")));
  EXPECT_EQ(one.load("c"), payload);

  const std::vector<CacheFile> files = cache_files(root_);
  ASSERT_EQ(files.size(), 2u);
  for (const CacheFile& file : files) {
    EXPECT_EQ(file.kind, "kernels/one");
    EXPECT_EQ(file.bytes, entry_bytes);
  }
}

TEST_F(KernelDiskCacheTest, PruningAndClearingCountWhatTheyRemove) {
  const KernelDiskCache::Bytes payload(100, 1);
  for (int i = 0; i < 5; ++i) {
    cache_.store("key " + std::to_string(i), payload);
    age(cache_.entry_path("key " + std::to_string(i)), 100 - i);  // key 0 the oldest
  }
  fs::create_directories(root_ / "tuning");
  std::ofstream(root_ / "tuning" / "x.json") << "{}";
  const uint64_t entry_bytes = fs::file_size(cache_.entry_path("key 0"));
  EXPECT_EQ(prune_kernel_cache(root_, entry_bytes * 3), 2u);  // tuning tables are not pruned
  EXPECT_FALSE(fs::exists(cache_.entry_path("key 0")));
  EXPECT_FALSE(fs::exists(cache_.entry_path("key 1")));
  EXPECT_TRUE(fs::exists(cache_.entry_path("key 2")));
  EXPECT_EQ(prune_kernel_cache(root_, entry_bytes * 3), 0u);
  EXPECT_EQ(clear_cache(root_), 4u);  // three kernels and the tuning table
  EXPECT_TRUE(cache_files(root_).empty());
}

// What a store that died left (its temporary, before the rename) is listed as "unfinished",
// pruned once an hour old (a younger one may still be written), and cleared.
TEST_F(KernelDiskCacheTest, UnfinishedFilesAreListedPrunedWhenStaleAndCleared) {
  const fs::path entry = cache_.entry_path("key");
  fs::create_directories(entry.parent_path());
  const fs::path stale = entry.string() + ".tmp.4242.0", fresh = entry.string() + ".tmp.4243.0";
  std::ofstream(stale) << std::string(1000, 'x');
  std::ofstream(fresh) << std::string(1000, 'x');
  age(stale, 2 * 3600);
  fs::create_directories(root_ / "tuning");
  std::ofstream(root_ / "tuning" / "x.json.tmp999") << "{}";
  const std::vector<CacheFile> files = cache_files(root_);
  ASSERT_EQ(files.size(), 3u);
  for (const CacheFile& f : files) EXPECT_EQ(f.kind, "unfinished") << f.path;
  EXPECT_EQ(prune_kernel_cache(root_, uint64_t{1} << 30), 1u);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_EQ(clear_cache(root_), 2u);
  EXPECT_TRUE(cache_files(root_).empty());
}

TEST(KernelCacheCap, ReadFromTheEnvironment) {
  const char* old = std::getenv("HAL_KERNEL_CACHE_MAX_BYTES");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::unsetenv("HAL_KERNEL_CACHE_MAX_BYTES");
  EXPECT_EQ(kernel_cache_cap(), uint64_t{512} << 20);
  ::setenv("HAL_KERNEL_CACHE_MAX_BYTES", "123456", 1);
  EXPECT_EQ(kernel_cache_cap(), 123456u);
  // Not a number of bytes: the default. strtoull alone took "-1" as 2^64 - 1 and saturated.
  for (const char* bad : {"12 MB", "-1", " 5", "+5", "99999999999999999999999"}) {
    ::setenv("HAL_KERNEL_CACHE_MAX_BYTES", bad, 1);
    EXPECT_EQ(kernel_cache_cap(), uint64_t{512} << 20) << bad;
  }
  if (saved)
    ::setenv("HAL_KERNEL_CACHE_MAX_BYTES", saved->c_str(), 1);
  else
    ::unsetenv("HAL_KERNEL_CACHE_MAX_BYTES");
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
