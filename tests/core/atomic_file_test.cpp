// write_file_atomically, which the kernel, tuning and calibration caches, checkpoints, the
// Vulkan pipeline cache and `hal bench --output` share: a file appears whole or not at all, and
// writers of one path at once never mix their bytes.
#include "core/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace hal::detail {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The names in the folder: no temporary may be left behind.
  std::vector<std::string> names() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(root_))
      found.push_back(entry.path().filename().string());
    return found;
  }

  test::ScratchDir scratch_{"hal-atomic-file"};
  fs::path root_ = scratch_.path();
};

TEST_F(AtomicFileTest, WritesThePartsInOrderAndReplacesTheFileThere) {
  const fs::path file = root_ / "out.bin";
  const char bytes[3] = {'\0', '\x7f', '\xff'};
  ASSERT_EQ(write_file_atomically(file, {"head", std::string_view(bytes, 3), "", "tail"}), "");
  EXPECT_EQ(read(file), std::string("head") + std::string(bytes, 3) + "tail");
  ASSERT_EQ(write_file_atomically(file, {"second"}), "");
  EXPECT_EQ(read(file), "second");
  EXPECT_EQ(names(), std::vector<std::string>{"out.bin"});
}

TEST_F(AtomicFileTest, ManyThreadsWritingOnePathLeaveOneWholeFile) {
  const fs::path file = root_ / "shared.json";
  constexpr int kThreads = 16, kRounds = 20;
  // Each writer's document is long and its own: a mix of two would show.
  std::vector<std::string> documents;
  for (int t = 0; t < kThreads; ++t) documents.push_back(std::string(64 * 1024, char('a' + t)));
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      for (int round = 0; round < kRounds && failures[t].empty(); ++round)
        failures[t] = write_file_atomically(file, {documents[t]});
    });
  for (std::thread& writer : writers) writer.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "writer " << t;
  const std::string result = read(file);
  EXPECT_NE(std::find(documents.begin(), documents.end(), result), documents.end())
      << "the file is no one writer's whole document (" << result.size() << " bytes)";
  EXPECT_EQ(names(), std::vector<std::string>{"shared.json"});
}

TEST_F(AtomicFileTest, AWriteRemovesTheTemporariesOfWritersThatDied) {
  const fs::path file = root_ / "model.safetensors";
  const fs::path abandoned = root_ / "model.safetensors.tmp.99999.0";
  const fs::path in_progress = root_ / "model.safetensors.tmp.99999.1";
  const fs::path other = root_ / "other.safetensors.tmp.99999.0";
  for (const fs::path& p : {abandoned, in_progress, other}) std::ofstream(p) << "part";
  const auto two_hours_ago = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(abandoned, two_hours_ago);
  fs::last_write_time(other, two_hours_ago);
  ASSERT_EQ(write_file_atomically(file, {"whole"}), "");
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(in_progress));  // fresh: a writer may still be at it
  EXPECT_TRUE(fs::exists(other));        // another file's
  EXPECT_EQ(read(file), "whole");
}

TEST_F(AtomicFileTest, AFolderThatIsNotThereIsNamedAndNothingIsMade) {
  const fs::path file = root_ / "missing" / "out.json";
  const std::string failed = write_file_atomically(file, {"text"});
  EXPECT_NE(failed.find("cannot write " + file.string() + ".tmp."), std::string::npos) << failed;
  EXPECT_FALSE(fs::exists(root_ / "missing"));
}

TEST_F(AtomicFileTest, AFolderThatIsAFileIsNamedWithTheReason) {
  std::ofstream(root_ / "plain") << "a file, not a folder";
  const fs::path file = root_ / "plain" / "out.json";
  const std::string failed = write_file_atomically(file, {"text"});
  EXPECT_NE(failed.find("cannot write " + file.string() + ".tmp."), std::string::npos) << failed;
  EXPECT_NE(failed.find(": Not a directory"), std::string::npos) << failed;
  EXPECT_EQ(names(), std::vector<std::string>{"plain"});
}

// The bytes are written (and flushed) by hand now, not by a stream: a write the system cuts
// short must still fail whole. A child process caps its file size below the document.
TEST_F(AtomicFileTest, AWriteCutShortFailsAndLeavesTheOldFileAndNoTemporary) {
  const fs::path file = root_ / "checkpoint.bin";
  ASSERT_EQ(write_file_atomically(file, {"old"}), "");
  const pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead of killing the child
    const rlimit cap{1024, 1024};
    ::setrlimit(RLIMIT_FSIZE, &cap);
    const std::string failed = write_file_atomically(file, {std::string(64 * 1024, 'x')});
    const bool named = failed.find("cannot write " + file.string() + ".tmp.") == 0 &&
                       failed.find(": File too large") != std::string::npos;
    ::_exit(named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the failure did not name the temporary and EFBIG";
  EXPECT_EQ(read(file), "old");
  EXPECT_EQ(names(), std::vector<std::string>{"checkpoint.bin"});
}

TEST_F(AtomicFileTest, ARenameRefusedLeavesWhatWasThereAndNoTemporary) {
  const fs::path folder = root_ / "taken";  // a non-empty folder cannot be renamed over
  fs::create_directories(folder / "inside");
  const std::string failed = write_file_atomically(folder, {"text"});
  EXPECT_NE(failed.find("cannot rename " + folder.string() + ".tmp."), std::string::npos) << failed;
  EXPECT_NE(failed.find(" to " + folder.string() + ": "), std::string::npos) << failed;
  EXPECT_TRUE(fs::is_directory(folder / "inside"));
  EXPECT_EQ(names(), std::vector<std::string>{"taken"});
}

}  // namespace
}  // namespace hal::detail
