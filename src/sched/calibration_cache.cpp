// The calibration cache: one JSON file per device under <cache root>/calibration, and a memo
// in memory so that selection among many devices reads no files after the first lookup.

#include <algorithm>
#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/atomic_file.hpp"
#include "core/kernel_disk_cache.hpp"
#include "hal/calibration.hpp"
#include "hal/log.hpp"
#include "sched/calibration_store.hpp"

namespace hal {
namespace {

constexpr const char* kSchema = "hal.calibration/1";

struct Memo {
  std::mutex mutex;
  // By cache file path: what the file held (null for a missing or stale entry).
  std::unordered_map<std::string, std::shared_ptr<const Calibration>> entries;
};

// The cache file's path as text: cheaper than std::filesystem::path where selection looks up
// a thousand devices.
std::string cache_file_text(const Device& device) {
  std::string root = detail::cache_root_text();
  if (root.empty()) return root;
  return root.append("/calibration/").append(device.info().uuid).append(".json");
}

Memo& memo() {
  static Memo instance;
  return instance;
}

// The memo's key for a device: its cache file, or, with no cache directory (HOME and
// XDG_CACHE_HOME unset, as under `env -i` or a service), its UUID, so that what this process
// measured still counts in it.
std::string memo_key(const Device& device, const std::string& file) {
  return file.empty() ? "uuid:" + device.info().uuid : file;
}

// Products are timed at sizes up to a few thousand; 2^20 is a 4 TiB f32 matrix, past any device.
constexpr double kMaxMatmulSize = 1 << 20;

// A measured figure: finite and >= 0, 0 where it was not measured (calibrate leaves what a
// device cannot do at 0). A negative or infinite one (a hand-edited or damaged file) would price
// the device's work as free, so that it wins every choice: the entry is refused, naming it.
double figure(const nlohmann::json& json, const std::string& field, const std::string& where = "") {
  const nlohmann::json& value = json.at(field);
  const double number = value.is_number() ? value.get<double>() : -1;
  if (!(number >= 0 && std::isfinite(number)))
    throw std::runtime_error(where + field + " " + value.dump() + " is not a finite number >= 0");
  return number;
}

// Entry `i` of a cached "matmul" list. get<int64_t>() of 1e30 is undefined behaviour and of 2.5
// silently 2: the size is checked as a number first.
MatmulFigure matmul_figure(const nlohmann::json& entry, size_t i) {
  const std::string field = "matmul[" + std::to_string(i) + "].";
  const nlohmann::json& dtype_name = entry.at("dtype");
  const std::optional<DType> dtype =
      dtype_name.is_string() ? parse_dtype(dtype_name.get<std::string>()) : std::nullopt;
  if (!dtype) throw std::runtime_error(field + "dtype " + dtype_name.dump() + " is no dtype");
  const nlohmann::json& size = entry.at("size");
  const double n = size.is_number() ? size.get<double>() : 0;
  if (!(n >= 1 && n <= kMaxMatmulSize && n == std::floor(n)))
    throw std::runtime_error(field + "size " + size.dump() + " is not a whole number from 1 to " +
                             std::to_string(static_cast<int64_t>(kMaxMatmulSize)));
  return {*dtype, static_cast<int64_t>(n), figure(entry, "gflops", field)};
}

std::optional<Calibration> parse(const std::string& text, std::string& problem) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object() || json.value("schema", "") != kSchema) {
    problem = "not a " + std::string(kSchema) + " document";
    return std::nullopt;
  }
  try {
    Calibration c;
    c.device_id = json.at("device").get<std::string>();
    c.uuid = json.at("uuid").get<std::string>();
    c.driver_version = json.at("driver_version").get<std::string>();
    c.host_to_device_gbps = figure(json, "host_to_device_gbps");
    c.device_to_host_gbps = figure(json, "device_to_host_gbps");
    c.device_bandwidth_gbps = figure(json, "device_bandwidth_gbps");
    c.launch_latency_us = figure(json, "launch_latency_us");
    c.seconds = json.at("seconds").get<double>();
    c.measured_at = json.at("measured_at").get<std::string>();
    c.quick = json.value("quick", false);
    const nlohmann::json& matmul = json.at("matmul");
    if (!matmul.is_array()) throw std::runtime_error("matmul " + matmul.dump() + " is not a list");
    for (size_t i = 0; i < matmul.size(); ++i) c.matmul.push_back(matmul_figure(matmul.at(i), i));
    return c;
  } catch (const std::exception& error) {
    problem = error.what();
    return std::nullopt;
  }
}

std::optional<Calibration> read_entry(const std::filesystem::path& file, const Device& device) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  std::string problem;
  std::optional<Calibration> calibration = parse(text.str(), problem);
  const DeviceInfo& info = device.info();
  if (!calibration) {
    log(LogLevel::warn, "calibration cache " + file.string() + " ignored: " + problem);
    return std::nullopt;
  }
  if (calibration->uuid != info.uuid || calibration->driver_version != info.driver_version) {
    log(LogLevel::info, "calibration of " + info.id + " is stale (made for " + calibration->uuid +
                            " with driver " + calibration->driver_version + "; the device is " +
                            info.uuid + " with driver " + info.driver_version +
                            "): ignored (`hal calibrate` measures it again)");
    return std::nullopt;
  }
  calibration->from_cache = true;
  return calibration;
}

}  // namespace

double Calibration::matmul_gflops(DType dtype) const {
  double best = 0;
  for (const MatmulFigure& figure : matmul)
    if (figure.dtype == dtype) best = std::max(best, figure.gflops);
  return best;
}

double Calibration::matmul_gflops(DType dtype, double flops_each) const {
  std::vector<MatmulFigure> curve;
  for (const MatmulFigure& figure : matmul)
    if (figure.dtype == dtype && figure.size > 0) curve.push_back(figure);
  if (curve.empty()) return 0;
  std::sort(curve.begin(), curve.end(),
            [](const MatmulFigure& a, const MatmulFigure& b) { return a.size < b.size; });
  // A larger product reaches at least a smaller one's throughput: a dip is a disturbed
  // measurement (another process, a frequency change), not the device.
  for (size_t i = 1; i < curve.size(); ++i)
    curve[i].gflops = std::max(curve[i].gflops, curve[i - 1].gflops);
  const double n = std::cbrt(flops_each / 2);
  if (!(n > double(curve.front().size))) return curve.front().gflops;
  for (size_t i = 1; i < curve.size(); ++i)
    if (n <= double(curve[i].size)) {
      const double low = std::log(double(curve[i - 1].size)),
                   high = std::log(double(curve[i].size));
      const double t = (std::log(n) - low) / (high - low);
      return curve[i - 1].gflops + t * (curve[i].gflops - curve[i - 1].gflops);
    }
  return curve.back().gflops;
}

std::string to_json(const Calibration& c) {
  nlohmann::ordered_json matmul = nlohmann::ordered_json::array();
  for (const MatmulFigure& figure : c.matmul)
    matmul.push_back(
        {{"dtype", to_string(figure.dtype)}, {"size", figure.size}, {"gflops", figure.gflops}});
  return nlohmann::ordered_json{{"schema", kSchema},
                                {"device", c.device_id},
                                {"uuid", c.uuid},
                                {"driver_version", c.driver_version},
                                {"host_to_device_gbps", c.host_to_device_gbps},
                                {"device_to_host_gbps", c.device_to_host_gbps},
                                {"device_bandwidth_gbps", c.device_bandwidth_gbps},
                                {"matmul", matmul},
                                {"launch_latency_us", c.launch_latency_us},
                                {"seconds", c.seconds},
                                {"measured_at", c.measured_at},
                                {"quick", c.quick}}
      .dump(2);
}

std::filesystem::path calibration_cache_file(const Device& device) {
  return cache_file_text(device);
}

std::optional<Calibration> cached_calibration(const Device& device) {
  const std::shared_ptr<const Calibration> found = detail::find_calibration(device);
  if (!found) return std::nullopt;
  Calibration calibration = *found;
  calibration.device_id = device.info().id;  // ids may change with HAL_DEVICES; UUIDs do not
  return calibration;
}

namespace detail {

std::shared_ptr<const Calibration> find_calibration(const Device& device) {
  const std::string file = cache_file_text(device);
  const std::string key = memo_key(device, file);
  Memo& m = memo();
  {
    std::lock_guard lock(m.mutex);
    if (auto found = m.entries.find(key); found != m.entries.end()) return found->second;
  }
  if (file.empty()) return nullptr;  // nothing measured in this process, and no file to read
  std::shared_ptr<const Calibration> calibration;
  if (std::optional<Calibration> read = read_entry(file, device))
    calibration = std::make_shared<const Calibration>(std::move(*read));
  std::lock_guard lock(m.mutex);
  return m.entries.emplace(file, std::move(calibration)).first->second;
}

}  // namespace detail

void reload_calibrations() {
  std::lock_guard lock(memo().mutex);
  memo().entries.clear();
}

namespace detail {

void store_calibration(const Device& device, const Calibration& calibration) {
  const std::filesystem::path file = calibration_cache_file(device);
  {
    auto entry = std::make_shared<Calibration>(calibration);
    entry->from_cache = true;  // as later lookups see it
    std::lock_guard lock(memo().mutex);
    memo().entries[memo_key(device, file.native())] = std::move(entry);
  }
  if (file.empty()) return;  // no cache directory: kept for this process only
  // Best effort, as the kernel cache: threads storing at once each write a file of their own
  // (one shared pid-named file once let one's rename take the other's half-written file).
  std::error_code error;
  std::filesystem::create_directories(file.parent_path(), error);
  if (const std::string failed = write_file_atomically(file, {to_json(calibration), "\n"});
      !failed.empty())
    log(LogLevel::warn, "could not write the calibration cache " + file.string() + ": " + failed);
}

}  // namespace detail
}  // namespace hal
