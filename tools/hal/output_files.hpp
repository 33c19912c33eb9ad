// Where the commands write their results: the file each model output is written to under
// --output (hal run, hal eval), the checks that refuse an --output before any work rather than
// after it, and a document written whole or not at all (hal bench --output).
#pragma once

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <set>
#include <string>

#include "core/atomic_file.hpp"
#include "hal/error.hpp"

namespace hal::tool {

// The file of output `name` under --output: its name with characters a file name should not
// hold as '_', and "_2", "_3" ... where two names would make the same file ("a.b" and "a_b"
// stay apart; "a/b" and "a_b" do not overwrite each other). `taken`: the files given so far for
// this directory.
inline std::string output_file_name(const std::string& name, std::set<std::string>& taken) {
  std::string out;
  for (char c : name)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "output";
  std::string file = out + ".npy";
  for (int n = 2; !taken.insert(file).second; ++n) file = out + "_" + std::to_string(n) + ".npy";
  return file;
}

// Whether this process may make or change files in `directory` (an existing one).
inline bool writable_directory(const std::filesystem::path& directory) {
  return ::access(directory.c_str(), W_OK | X_OK) == 0;
}

// Refuses an --output directory that exists as something else (a file), or that cannot be made
// (the nearest existing folder above it is not writable), before the run, which would otherwise
// fail only once its outputs are written.
inline void check_output_directory(const std::string& directory, const char* option) {
  std::error_code error;
  if (std::filesystem::exists(directory, error) && !std::filesystem::is_directory(directory, error))
    throw Error(ErrorCode::InvalidArgument,
                std::string(option) + " " + directory + ": not a directory");
  std::filesystem::path existing = std::filesystem::absolute(directory, error);
  while (!existing.empty() && !std::filesystem::exists(existing, error) &&
         existing != existing.parent_path())
    existing = existing.parent_path();
  if (!std::filesystem::is_directory(existing, error) || !writable_directory(existing))
    throw Error(ErrorCode::InvalidArgument, std::string(option) + " " + directory +
                                                ": cannot write there (" + existing.string() +
                                                " is not a writable directory)");
}

// Makes the --output directory (and its parents); what stops it is named with the path.
inline void make_output_directory(const std::string& directory, const char* option) {
  check_output_directory(directory, option);
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    throw Error(ErrorCode::InvalidArgument, std::string(option) + " " + directory +
                                                ": cannot make the directory (" + error.message() +
                                                ")");
}

// Refuses an --output file that cannot be written where it is asked for (a directory, or a file
// in a directory that does not exist) before the work whose document it would hold.
inline void check_output_file(const std::string& file, const char* option) {
  const std::filesystem::path path(file);
  const std::filesystem::path parent =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw Error(ErrorCode::InvalidArgument,
                std::string(option) + " " + file + ": a directory, not a file");
  if (!std::filesystem::is_directory(parent, error))
    throw Error(ErrorCode::InvalidArgument,
                std::string(option) + " " + file + ": " + parent.string() + " is not a directory");
  if (!writable_directory(parent) ||
      (std::filesystem::exists(path, error) && ::access(path.c_str(), W_OK) != 0))
    throw Error(ErrorCode::InvalidArgument,
                std::string(option) + " " + file + ": cannot write there (permission denied)");
}

// Writes `text` to `file` whole or not at all: into a temporary file beside it (the same file
// system, so the rename is atomic), renamed over it once complete. A crash, a full disk or a
// reader at the wrong moment never sees part of a document, and a file already there is kept
// until the new one is whole.
inline void write_file_atomically(const std::string& file, const std::string& text,
                                  const char* option) {
  if (const std::string failed = detail::write_file_atomically(file, {text}); !failed.empty())
    throw Error(ErrorCode::InvalidArgument, std::string(option) + " " + file + ": " + failed);
}

}  // namespace hal::tool
