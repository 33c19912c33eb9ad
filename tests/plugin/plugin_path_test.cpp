// HAL_PLUGIN_PATH naming things that are not shared libraries: FIFOs (dlopen would block on
// them for ever), directories, links to those or to nothing. Only regular files, links
// followed, are opened; the rest are listed as skipped with the reason. CTest runs this group
// in a process of its own, since hal reads HAL_PLUGIN_PATH once.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "hal/hal.hpp"
#include "hal/plugin_discovery.hpp"

namespace hal::test {
namespace {

namespace fs = std::filesystem;

const PluginInfo* find(const std::vector<PluginInfo>& all, const fs::path& path) {
  for (const PluginInfo& info : all)
    if (info.path == path.string()) return &info;
  return nullptr;
}

TEST(PluginPath, OnlyRegularFilesAreOpenedAndTheRestAreListedAsSkipped) {
  const fs::path folder =
      fs::temp_directory_path() / ("hal_plugin_path_" + std::to_string(getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder / "elsewhere");
  ASSERT_EQ(mkfifo((folder / "x.so").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((folder / "elsewhere" / "named.so").c_str(), 0600), 0);
  fs::create_directory(folder / "d.so");
  // A link to a FIFO of its own: one to x.so would be x.so, examined once.
  ASSERT_EQ(mkfifo((folder / "elsewhere" / "fifo").c_str(), 0600), 0);
  fs::create_symlink(folder / "elsewhere" / "fifo", folder / "to_fifo.so");
  fs::create_symlink(folder / "absent", folder / "dangling.so");
  fs::create_symlink(fs::path(HAL_TEST_PLUGINS) / "libsim_abi_1_1.so", folder / "to_plugin.so");
  const std::string path = folder.string() + ":" + (folder / "elsewhere" / "named.so").string();
  ASSERT_EQ(setenv("HAL_PLUGIN_PATH", path.c_str(), 1), 0);

  const std::vector<PluginInfo> all = plugins();
  const std::pair<const char*, const char*> skipped[] = {{"x.so", "a FIFO"},
                                                         {"elsewhere/named.so", "a FIFO"},
                                                         {"to_fifo.so", "a FIFO"},
                                                         {"d.so", "a directory"},
                                                         {"dangling.so", "a link to nothing"}};
  for (const auto& [name, why] : skipped) {
    const PluginInfo* info = find(all, folder / name);
    ASSERT_NE(info, nullptr) << name << " is not listed";
    EXPECT_FALSE(info->loaded) << name;
    EXPECT_NE(info->reason.find("skipped"), std::string::npos) << info->reason;
    EXPECT_NE(info->reason.find(why), std::string::npos) << info->reason;
  }
  const PluginInfo* linked = find(all, folder / "to_plugin.so");
  ASSERT_NE(linked, nullptr);
  EXPECT_TRUE(linked->loaded) << "a link to a plugin is followed: " << linked->reason;
  EXPECT_NO_THROW(device("sim_v1_1:0"));
  EXPECT_NO_THROW(device("sim:0"));
  fs::remove_all(folder);
}

}  // namespace
}  // namespace hal::test
