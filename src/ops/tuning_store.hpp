// The tuning cache: what `hal tune` found fastest per device x op x dtype x shape class, in one
// JSON file per device (<cache root>/tuning/<uuid>.json). The file names its key: device UUID,
// driver version, hal version and the hash of the kernels' source. A file whose key differs
// from the device's now is stale: it is ignored (and replaced by the next tune), because a new
// driver or a changed kernel can reorder the candidates.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hal/device_info.hpp"
#include "hal/tune.hpp"

namespace hal::ops {

struct TuningKey {
  std::string uuid, driver_version, hal_version;
  uint64_t kernel_hash = 0;
  bool operator==(const TuningKey&) const = default;
};

// One tuned class is a hal::TuneEntry (hal/tune.hpp), as `hal tune` reports it; from_cache is
// the report's alone (false in a table).
struct TuningTable {
  TuningKey key;
  std::vector<TuneEntry> entries;
  const TuneEntry* find(const std::string& op, const std::string& dtype,
                        const std::string& shape_class) const;
};

// The key `device` has now (kernel_hash: the hash of the kernels hal tunes).
TuningKey tuning_key(const DeviceInfo& device);

// <cache root>/tuning/<uuid>.json; empty when there is no cache root.
std::filesystem::path tuning_file(const std::string& uuid);

// The table in `file` if its key is `key`; nullopt for a missing, unreadable or stale file
// (stale and unreadable ones are logged).
std::optional<TuningTable> load_tuning(const std::filesystem::path& file, const TuningKey& key);
// Writes `table` to `file` (a temporary file renamed into place); InvalidState naming the file
// when it cannot be written.
void save_tuning(const std::filesystem::path& file, const TuningTable& table);
// Adds `fresh` (classes just tuned) to what `file` holds now under `table.key`, and to `table`'s
// entries the file lacks, then saves it: under an exclusive lock on "<file>.lock", so that two
// processes tuning one device at once keep each other's classes. Returns the table saved;
// InvalidState naming the folder, lock or file and the system's reason when it cannot save.
TuningTable merge_and_save_tuning(const std::filesystem::path& file, const TuningTable& table,
                                  const std::vector<TuneEntry>& fresh);

// The device's table as this process sees it: read once, then kept in memory; empty (no
// entries) when nothing valid is cached. `remember` replaces it after a tune.
std::shared_ptr<const TuningTable> tuning_table(const DeviceInfo& device);
void remember_tuning(const DeviceInfo& device, TuningTable table);
// Forgets what was read, so the next lookup reads the files again (tests, `hal cache --clear`).
void forget_tunings();

}  // namespace hal::ops
