// The on-disk kernel cache on its own: round trips, every kind of damaged entry refused, the
// size cap's pruning of the least recently used entries, what `hal cache` lists and clears, and
// the kernels never kept (those that #include files).
#include "core/kernel_disk_cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

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
  EXPECT_EQ(kernel_cache_cap_setting().problem, "");
  // Sizes as the other settings take them ("1G" was ignored with a warning shown at no default
  // log level).
  const std::pair<const char*, uint64_t> sizes[] = {{"123456", 123456},
                                                    {"1G", uint64_t{1} << 30},
                                                    {"512MiB", uint64_t{512} << 20},
                                                    {"12 MB", uint64_t{12} << 20},
                                                    {"0", 0}};
  for (const auto& [text, bytes] : sizes) {
    ::setenv("HAL_KERNEL_CACHE_MAX_BYTES", text, 1);
    EXPECT_EQ(kernel_cache_cap(), bytes) << text;
    EXPECT_EQ(kernel_cache_cap_setting().problem, "") << text;
  }
  // Not a size: the default, and why. strtoull alone took "-1" as 2^64 - 1 and saturated.
  for (const char* bad : {"lots", "-1", "1X", "99999999999999999999999"}) {
    ::setenv("HAL_KERNEL_CACHE_MAX_BYTES", bad, 1);
    EXPECT_EQ(kernel_cache_cap(), uint64_t{512} << 20) << bad;
    const std::string problem = kernel_cache_cap_setting().problem;
    EXPECT_NE(problem.find("HAL_KERNEL_CACHE_MAX_BYTES"), std::string::npos) << problem;
    EXPECT_NE(problem.find(std::string("'") + bad + "'"), std::string::npos) << problem;
    EXPECT_NE(problem.find("the cap stays 512 MiB"), std::string::npos) << problem;
  }
  if (saved)
    ::setenv("HAL_KERNEL_CACHE_MAX_BYTES", saved->c_str(), 1);
  else
    ::unsetenv("HAL_KERNEL_CACHE_MAX_BYTES");
}

// The key holds the source and the options, never the files an #include reads: kernels that
// read any are not kept, lest a changed header get the old binary.
TEST(DiskCacheRefusal, IncludesAndIncludePathsAreNeverCached) {
  const std::string plain = "__kernel void k(__global float* x) { x[0] = 1; }";
  EXPECT_EQ(disk_cache_refusal(plain, ""), "");
  EXPECT_EQ(disk_cache_refusal(plain, "-cl-fast-relaxed-math -DX=1 -w"), "");
  EXPECT_EQ(disk_cache_refusal("// include guard\n#define INCLUDE 1\n" + plain, ""), "");
  for (const char* code :
       {"#include \"v.h\"\n", "  #  include <v.h>\n", "int a;\n#include_next <v>"}) {
    const std::string why = disk_cache_refusal(code + plain, "");
    EXPECT_NE(why.find("#include directive"), std::string::npos) << code;
  }
  for (const char* flags : {"-I/tmp/h", "-w -I /tmp/h", "-isystem /h", "-include pre.h",
                            "--include-path=/h", "--pre-include=pre.h", "-iquote\t/h"}) {
    const std::string why = disk_cache_refusal(plain, flags);
    EXPECT_NE(why.find("read other files"), std::string::npos) << flags;
  }
  EXPECT_NE(disk_cache_refusal(plain, "-w -I/tmp/h").find("(-I/tmp/h)"), std::string::npos);
}

// Calibrations and the tuning tables' lock files are part of the cache as `hal cache` shows and
// clears it (README: "safe to delete (hal cache --clear)"), and are never pruned as kernels are.
TEST_F(KernelDiskCacheTest, CalibrationsAndTuningLocksAreListedClearedNeverPruned) {
  cache_.store(key_, payload_);
  fs::create_directories(root_ / "calibration");
  fs::create_directories(root_ / "tuning");
  std::ofstream(root_ / "calibration" / "uuid-1.json") << "{}";
  std::ofstream(root_ / "tuning" / "uuid-1.json") << "{}";
  std::ofstream(root_ / "tuning" / "uuid-1.json.lock");
  std::ofstream(root_ / "tuning" / "uuid-2.json.lock");
  for (const char* old : {"calibration/uuid-1.json", "tuning/uuid-1.json.lock"})
    age(root_ / old, 1000);  // older than the kernel: first in line were they pruned
  std::map<std::string, int> kinds;
  for (const CacheFile& file : cache_files(root_)) ++kinds[file.kind];
  EXPECT_EQ(kinds,
            (std::map<std::string, int>{
                {"calibration", 1}, {"kernels/test", 1}, {"tuning", 1}, {"tuning lock", 2}}));
  EXPECT_EQ(prune_kernel_cache(root_, 0), 1u);  // the kernel alone
  EXPECT_TRUE(fs::exists(root_ / "calibration" / "uuid-1.json"));
  EXPECT_TRUE(fs::exists(root_ / "tuning" / "uuid-1.json.lock"));

  // A lock a tune holds now stays (removing it would let another tune lock a new file).
  const int held = ::open((root_ / "tuning" / "uuid-2.json.lock").c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  EXPECT_EQ(clear_cache(root_), 3u);
  ::close(held);
  ASSERT_EQ(cache_files(root_).size(), 1u);
  EXPECT_EQ(cache_files(root_)[0].kind, "tuning lock");
  EXPECT_EQ(clear_cache(root_), 1u);
  EXPECT_TRUE(cache_files(root_).empty());
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

// The XDG Base Directory spec: a relative XDG_CACHE_HOME is invalid and must be ignored (it
// made the cache a folder under wherever the process happened to start).
TEST(CacheRoot, IgnoresARelativeXdgCacheHome) {
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  const auto old_hal = saved("HAL_CACHE_DIR"), old_xdg = saved("XDG_CACHE_HOME"),
             old_home = saved("HOME");
  ::unsetenv("HAL_CACHE_DIR");
  ::setenv("HOME", "/tmp/hal-home", 1);
  for (const char* relative : {"cache", "./cache", "../cache", "~/cache"}) {
    ::setenv("XDG_CACHE_HOME", relative, 1);
    EXPECT_EQ(cache_root(), fs::path("/tmp/hal-home/.cache/hal")) << relative;
  }
  ::unsetenv("HOME");
  ::setenv("XDG_CACHE_HOME", "cache", 1);
  EXPECT_EQ(cache_root(), fs::path()) << "no valid cache directory at all";
  ::unsetenv("XDG_CACHE_HOME");
  if (old_hal) ::setenv("HAL_CACHE_DIR", old_hal->c_str(), 1);
  if (old_xdg) ::setenv("XDG_CACHE_HOME", old_xdg->c_str(), 1);
  if (old_home) ::setenv("HOME", old_home->c_str(), 1);
}

}  // namespace
}  // namespace hal::detail
