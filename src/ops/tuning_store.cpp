#include "ops/tuning_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/atomic_file.hpp"
#include "core/embedded_kernels.hpp"
#include "core/hash.hpp"
#include "core/kernel_disk_cache.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"
#include "hal/version.hpp"

namespace hal::ops {
namespace {

constexpr const char* kSchema = "hal.tuning/1";

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

struct Memo {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const TuningTable>> by_uuid;
};

Memo& memo() {
  static Memo instance;
  return instance;
}

nlohmann::ordered_json key_json(const TuningKey& key) {
  return {{"uuid", key.uuid},
          {"driver_version", key.driver_version},
          {"hal_version", key.hal_version},
          {"kernel_hash", hex64(key.kernel_hash)}};
}

std::string describe(const TuningKey& key) { return key_json(key).dump(); }

}  // namespace

const TuneEntry* TuningTable::find(const std::string& op, const std::string& dtype,
                                   const std::string& shape_class) const {
  for (const TuneEntry& entry : entries)
    if (entry.op == op && entry.dtype == dtype && entry.shape_class == shape_class) return &entry;
  return nullptr;
}

TuningKey tuning_key(const DeviceInfo& device) {
  static const uint64_t kernels = detail::fnv1a_64(std::string(embedded_kernel("ops/gemm")) +
                                                   std::string(embedded_kernel("ops/reduce")));
  return {device.uuid, device.driver_version, std::string(version()), kernels};
}

std::filesystem::path tuning_file(const std::string& uuid) {
  const std::filesystem::path root = detail::cache_root();
  if (root.empty()) return {};
  return root / "tuning" / (uuid + ".json");
}

std::optional<TuningTable> load_tuning(const std::filesystem::path& file, const TuningKey& key) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  try {
    if (json.is_discarded() || !json.is_object() || json.value("schema", "") != kSchema)
      throw std::runtime_error(std::string("not a ") + kSchema + " document");
    const auto& k = json.at("key");
    TuningTable table;
    table.key = {k.at("uuid").get<std::string>(), k.at("driver_version").get<std::string>(),
                 k.at("hal_version").get<std::string>(),
                 std::stoull(k.at("kernel_hash").get<std::string>(), nullptr, 16)};
    if (!(table.key == key)) {
      log(LogLevel::info, "tuning cache " + file.string() + " is stale (made for " +
                              describe(table.key) + ", now " + describe(key) + "): ignored");
      return std::nullopt;
    }
    for (const auto& e : json.at("entries"))
      table.entries.push_back({e.at("op").get<std::string>(), e.at("dtype").get<std::string>(),
                               e.at("shape_class").get<std::string>(),
                               e.at("choice").get<std::string>(), e.at("params").get<std::string>(),
                               e.at("hal_ms").get<double>(), e.at("default_ms").get<double>(),
                               e.at("vendor_ms").get<double>(), e.at("candidates_tried").get<int>(),
                               e.at("candidates_rejected").get<int>()});
    return table;
  } catch (const std::exception& error) {
    log(LogLevel::warn, "tuning cache " + file.string() + " ignored: " + error.what());
    return std::nullopt;
  }
}

void save_tuning(const std::filesystem::path& file, const TuningTable& table) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const TuneEntry& e : table.entries)
    entries.push_back({{"op", e.op},
                       {"dtype", e.dtype},
                       {"shape_class", e.shape_class},
                       {"choice", e.choice},
                       {"params", e.params},
                       {"hal_ms", e.hal_ms},
                       {"default_ms", e.default_ms},
                       {"vendor_ms", e.vendor_ms},
                       {"candidates_tried", e.candidates_tried},
                       {"candidates_rejected", e.candidates_rejected}});
  const std::string text = nlohmann::ordered_json{
      {"schema", kSchema},
      {"key", key_json(table.key)},
      {"entries", entries}}.dump(2);
  std::error_code error;
  std::filesystem::create_directories(file.parent_path(), error);
  // The kernel cache's pruner sweeps the tuning folder's unfinished files too.
  if (const std::string failed =
          detail::write_file_atomically(file, {text, "\n"}, detail::Abandoned::left_to_pruner);
      !failed.empty())
    throw Error(ErrorCode::InvalidState, "the tuning cache " + file.string() + ": " + failed);
}

TuningTable merge_and_save_tuning(const std::filesystem::path& file, const TuningTable& table,
                                  const std::vector<TuneEntry>& fresh) {
  std::error_code error;
  if (!std::filesystem::create_directories(file.parent_path(), error) && error)
    throw Error(ErrorCode::InvalidState, "cannot make the tuning cache's folder " +
                                             file.parent_path().string() + ": " + error.message());
  const std::string lock_path = file.string() + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0)
    throw Error(ErrorCode::InvalidState,
                "cannot open the tuning cache's lock " + lock_path + ": " + std::strerror(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing drops the flock
  } unlock{lock};
  while (::flock(lock, LOCK_EX) != 0)
    if (errno != EINTR)
      throw Error(ErrorCode::InvalidState,
                  "cannot lock the tuning cache's lock " + lock_path + ": " + std::strerror(errno));
  const auto same_class = [](const TuneEntry& a, const TuneEntry& b) {
    return a.op == b.op && a.dtype == b.dtype && a.shape_class == b.shape_class;
  };
  const auto put = [&](std::vector<TuneEntry>& entries, const TuneEntry& e, bool replace) {
    const auto at = std::find_if(entries.begin(), entries.end(),
                                 [&](const TuneEntry& x) { return same_class(x, e); });
    if (at == entries.end())
      entries.push_back(e);
    else if (replace)
      *at = e;
  };
  TuningTable merged{table.key, {}};
  if (std::optional<TuningTable> now = load_tuning(file, table.key)) merged.entries = now->entries;
  for (const TuneEntry& e : table.entries) put(merged.entries, e, false);
  for (const TuneEntry& e : fresh) put(merged.entries, e, true);
  save_tuning(file, merged);
  return merged;
}

std::shared_ptr<const TuningTable> tuning_table(const DeviceInfo& device) {
  Memo& m = memo();
  {
    std::lock_guard lock(m.mutex);
    if (auto found = m.by_uuid.find(device.uuid); found != m.by_uuid.end()) return found->second;
  }
  const TuningKey key = tuning_key(device);
  auto table = std::make_shared<TuningTable>();
  table->key = key;
  if (const std::filesystem::path file = tuning_file(device.uuid); !file.empty())
    if (std::optional<TuningTable> loaded = load_tuning(file, key)) *table = std::move(*loaded);
  std::lock_guard lock(m.mutex);
  return m.by_uuid.emplace(device.uuid, std::move(table)).first->second;
}

void remember_tuning(const DeviceInfo& device, TuningTable table) {
  auto shared = std::make_shared<const TuningTable>(std::move(table));
  std::lock_guard lock(memo().mutex);
  memo().by_uuid[device.uuid] = std::move(shared);
}

void forget_tunings() {
  std::lock_guard lock(memo().mutex);
  memo().by_uuid.clear();
}

}  // namespace hal::ops
