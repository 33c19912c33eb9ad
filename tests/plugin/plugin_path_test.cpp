// HAL_PLUGIN_PATH naming things that are no plugin to open: FIFOs (dlopen would block on them
// for ever), directories, links to those, to nothing or in a loop, copies of a plugin cut short
// (dlopen would kill the process with SIGBUS mapping them) or for another machine, and another
// name (a hard link) of a plugin examined already. Only whole ELF libraries for this machine
// are opened; the rest are listed as skipped with the reason. Names that are no library's
// (libx.so.bak) are not candidates at all. CTest runs this group in a process of its own, since
// hal reads HAL_PLUGIN_PATH once: the folder is made, and the plugins listed, once for the group.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "hal/hal.hpp"
#include "hal/plugin_discovery.hpp"

namespace hal::test {
namespace {

namespace fs = std::filesystem;

// A real plugin to copy: sim built as ABI 1.1's minor version, backend "simold".
fs::path plugin_to_copy() { return fs::path(HAL_TEST_PLUGINS) / "libsim_old_minor.so"; }

// In the build tree, next to the test plugins: a file system that runs code (/tmp may not), on
// which a hard link to a copy can be made.
fs::path folder() {
  return fs::path(HAL_TEST_PLUGINS).parent_path() /
         ("plugin_path_test." + std::to_string(getpid()));
}

std::vector<char> bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& file, const std::vector<char>& bytes) {
  std::ofstream(file, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// The lengths the copies cut short have: shorter than the ELF header, than its program
// headers, cut in a segment, and short of the end by one byte only.
std::vector<size_t> cut_lengths() {
  std::vector<size_t> lengths;
  const size_t whole = fs::file_size(plugin_to_copy());
  for (size_t length : {size_t{10}, size_t{64}, size_t{1000}, size_t{4096}, size_t{70000},
                        size_t{200000}, whole - 1})
    if (length < whole) lengths.push_back(length);
  return lengths;
}

fs::path cut_name(size_t length) { return "libcut_" + std::to_string(length) + ".so"; }

// Copies put aside and names with no version after ".so": none is a candidate.
const char* const kNotLibraries[] = {
    "libaside.so.bak", "libaside.so.disabled", "libaside.so.1.orig", "libaside.so.",
    "libaside.so.1.",  "libaside.so.1..2",     "libaside.so.1a",     "libaside.so.v1"};
// Versioned names, in the order examined: the numbers by value (1.9 before 1.10).
const char* const kVersioned[] = {"libversioned.so", "libversioned.so.1.9", "libversioned.so.1.10",
                                  "libversioned.so.2", "libversioned.so.10.0.1"};

void make_special_files() {
  const fs::path dir = folder();
  ASSERT_EQ(mkfifo((dir / "x.so").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((dir / "elsewhere" / "named.so").c_str(), 0600), 0);
  fs::create_directory(dir / "d.so");
  // A link to a FIFO of its own: one to x.so would be x.so, examined once.
  ASSERT_EQ(mkfifo((dir / "elsewhere" / "fifo").c_str(), 0600), 0);
  fs::create_symlink(dir / "elsewhere" / "fifo", dir / "to_fifo.so");
  fs::create_symlink(dir / "absent", dir / "dangling.so");
  fs::create_symlink(dir / "absent_too", dir / "dangling_too.so");
  fs::create_symlink(dir / "loop_b.so", dir / "loop_a.so");
  fs::create_symlink(dir / "loop_a.so", dir / "loop_b.so");
  fs::create_symlink(dir / "loop_d.so", dir / "loop_c.so");
  fs::create_symlink(dir / "loop_c.so", dir / "loop_d.so");
  fs::create_symlink(fs::path(HAL_TEST_PLUGINS) / "libsim_abi_1_1.so", dir / "to_plugin.so");
}

void make_copies() {
  const fs::path dir = folder();
  const std::vector<char> plugin = bytes_of(plugin_to_copy());
  ASSERT_GT(plugin.size(), 64u);
  for (size_t length : cut_lengths())
    write_file(dir / cut_name(length), std::vector<char>(plugin.begin(), plugin.begin() + length));
  std::vector<char> other_class = plugin, other_machine = plugin;
  other_class[4] = sizeof(void*) == 8 ? 1 : 2;   // EI_CLASS: ELFCLASS32 or ELFCLASS64
  other_machine[18] = other_machine[19] = 0x12;  // e_machine 0x1212 (4626), in either order
  write_file(dir / "libother_class.so", other_class);
  write_file(dir / "libother_machine.so", other_machine);
  fs::copy_file(plugin_to_copy(), dir / "libhard_a.so");
  fs::create_hard_link(dir / "libhard_a.so", dir / "libhard_b.so");
  for (const char* name : kNotLibraries) write_file(dir / name, {'x'});
  for (const char* name : kVersioned) write_file(dir / name, {'x'});
}

class PluginPath : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(folder());
    fs::create_directories(folder() / "elsewhere");
    make_special_files();
    make_copies();
    const std::string path =
        folder().string() + ":" + (folder() / "elsewhere" / "named.so").string();
    ASSERT_EQ(setenv("HAL_PLUGIN_PATH", path.c_str(), 1), 0);
    all_ = plugins();
  }
  static void TearDownTestSuite() { fs::remove_all(folder()); }

  // The listing's entry for `name` in the folder, or nullptr.
  static const PluginInfo* find(const fs::path& name) {
    for (const PluginInfo& info : all_)
      if (info.path == (folder() / name).string()) return &info;
    return nullptr;
  }
  // Where `name` is in the listing, or -1.
  static int position(const fs::path& name) {
    for (size_t i = 0; i < all_.size(); ++i)
      if (all_[i].path == (folder() / name).string()) return static_cast<int>(i);
    return -1;
  }
  // `name` is listed as not loaded, skipped, for a reason holding every one of `parts`.
  static void expect_skipped(const fs::path& name, std::initializer_list<std::string> parts) {
    const PluginInfo* info = find(name);
    ASSERT_NE(info, nullptr) << name << " is not listed";
    EXPECT_FALSE(info->loaded) << name;
    EXPECT_EQ(info->reason.rfind("skipped: ", 0), 0u) << info->reason;
    for (const std::string& part : parts)
      EXPECT_NE(info->reason.find(part), std::string::npos) << name << ": " << info->reason;
  }

  static inline std::vector<PluginInfo> all_;
};

TEST_F(PluginPath, OnlyRegularFilesAreOpenedAndTheRestAreListedAsSkipped) {
  expect_skipped("x.so", {"a FIFO"});
  expect_skipped(fs::path("elsewhere") / "named.so", {"a FIFO"});
  expect_skipped("to_fifo.so", {"a FIFO"});
  expect_skipped("d.so", {"a directory"});
  expect_skipped("dangling.so", {"a link to nothing"});
  expect_skipped("dangling_too.so", {"a link to nothing"});
  const PluginInfo* linked = find("to_plugin.so");
  ASSERT_NE(linked, nullptr);
  EXPECT_TRUE(linked->loaded) << "a link to a plugin is followed: " << linked->reason;
  EXPECT_NO_THROW(device("sim_v1_1:0"));
  EXPECT_NO_THROW(device("sim:0"));
}

// Each link of a loop is a candidate of its own (they were all one, their path unresolved).
TEST_F(PluginPath, EachLinkInALoopIsListedAsSkipped) {
  for (const char* name : {"loop_a.so", "loop_b.so", "loop_c.so", "loop_d.so"})
    expect_skipped(name, {"a symbolic link loop"});
}

// dlopen maps a file cut short and the process died of SIGBUS: the ELF headers are read first.
TEST_F(PluginPath, ACopyCutShortIsSkippedAndNamesWhereItEnds) {
  for (size_t length : cut_lengths()) {
    const fs::path name = cut_name(length);
    expect_skipped(name, {(folder() / name).string() + " is cut short: ",
                          ", the file has " + std::to_string(length) + " bytes"});
  }
  expect_skipped(cut_name(10), {"its ELF header ends at byte 64"});
  expect_skipped(cut_name(64), {"its program header table ends at byte"});
  expect_skipped(cut_name(1000), {"segment 0 ends at byte"});
  expect_skipped(
      cut_name(fs::file_size(plugin_to_copy()) - 1),
      {"its section header table ends at byte " + std::to_string(fs::file_size(plugin_to_copy()))});
  EXPECT_NO_THROW(device("sim:0")) << "hal lives on, and its other plugins load";
}

TEST_F(PluginPath, ALibraryForAnotherMachineIsSkipped) {
  expect_skipped("libother_class.so", {"libother_class.so is a ", "-bit ELF file; this hal is"});
  expect_skipped("libother_machine.so",
                 {"libother_machine.so is built for ELF machine 4626; this hal runs on"});
  expect_skipped("libversioned.so", {"libversioned.so is not an ELF file"});
}

// dlopen of a hard link returns the library loaded under the first name: its hal_plugin_init
// ran a second time, and the second name was refused for taking the backend's name again.
TEST_F(PluginPath, AHardLinkToAPluginIsADuplicateOfTheFirstName) {
  const PluginInfo* first = find("libhard_a.so");
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(first->loaded) << first->reason;
  EXPECT_EQ(first->name, "simold");
  expect_skipped("libhard_b.so", {"a duplicate of " + (folder() / "libhard_a.so").string()});
  EXPECT_NO_THROW(device("simold:0"));
}

TEST_F(PluginPath, OnlySoAndSoWithAVersionAreCandidatesVersionsInOrder) {
  for (const char* name : kNotLibraries) EXPECT_EQ(find(name), nullptr) << name << " is listed";
  int before = -1;
  for (const char* name : kVersioned) {
    const int at = position(name);
    ASSERT_NE(at, -1) << name << " is not listed";
    EXPECT_GT(at, before) << name << " is out of order";
    before = at;
  }
}

}  // namespace
}  // namespace hal::test
