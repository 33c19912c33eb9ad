// Files written whole or not at all: caches, checkpoints and reports that another process (or
// a crash) must never see half of.
#pragma once

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace hal::detail {

// Writes the concatenation of `parts` to `path`: into a temporary file beside it (the same file
// system, so the rename is atomic), flushed to the disk (fsync) and renamed over `path` once
// complete, then the folder flushed (best-effort) so the rename survives a crash too. A crash
// leaves the old file or the new one under `path`, never an empty or partial one. The
// temporary's name holds the process id and a count, so threads and processes writing one path
// at once each write their own and the last rename wins whole. Returns "" on success, else what
// went wrong ("cannot write <temporary>: <reason>", the reason "fsync: ..." when the flush
// failed; "cannot rename <temporary> to <path>: <reason>"), the temporary removed and a file
// already at `path` untouched. Makes no directories.
//
// A writer that died leaves its temporary behind; one untouched for kAbandonedAfter is
// abandoned (a writer at work keeps its file's time fresh). After a write the abandoned
// temporaries of `path` are removed, unless `abandoned` leaves them to the caller's own pruner
// (the kernel and tuning caches', which sweeps every unfinished file of the cache).
inline constexpr std::chrono::hours kAbandonedAfter{1};
enum class Abandoned { removed, left_to_pruner };
std::string write_file_atomically(const std::filesystem::path& path,
                                  std::initializer_list<std::string_view> parts,
                                  Abandoned abandoned = Abandoned::removed);

}  // namespace hal::detail
