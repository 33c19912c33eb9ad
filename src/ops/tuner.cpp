// hal::tune: searches the parameters of hal's GEMM and reduction kernels on a device, each
// candidate checked against cpu:0 before it is timed, and keeps the fastest per class in the
// tuning cache (ops/tuning_store.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include "core/host_cpu.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "hal/tune.hpp"
#include "ops/candidate_search.hpp"
#include "ops/gemm_choice.hpp"
#include "ops/reduce_params.hpp"
#include "ops/tuning_store.hpp"

namespace hal {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class Tuner {
 public:
  Tuner(const Device& device, const TuneOptions& options)
      : device_(device),
        info_(device.info()),
        options_(options),
        start_(Clock::now()),
        deadline_(start_ + options.budget),
        stream_(device.create_stream()),
        cpu_stream_(hal::detail::host_cpu().create_stream()) {}

  bool over_budget() const { return Clock::now() >= deadline_; }
  bool exhausted() const { return exhausted_; }

  TuneEntry matmul(const TuneShape& shape, const std::string& shape_class) {
    const Device cpu = hal::detail::host_cpu();
    const Tensor a = uniform({shape.m, shape.k}, DType::f32, 11, stream_, -1, 1);
    const Tensor b = uniform({shape.k, shape.n}, DType::f32, 12, stream_, -1, 1);
    const Tensor c = empty({shape.m, shape.n}, DType::f32, device_);
    const Tensor a_cpu = a.to(cpu, stream_), b_cpu = b.to(cpu, stream_);
    stream_.synchronize();  // the copies land before cpu:0's stream reads them
    const std::vector<float> reference =
        hal::matmul(a_cpu, b_cpu, cpu_stream_).to_vector<float>(cpu_stream_);
    GemmDesc gemm;
    gemm.m = shape.m;
    gemm.n = shape.n;
    gemm.k = shape.k;
    gemm.a = {a.storage().impl(), 0, shape.k, 0, false};
    gemm.b = {b.storage().impl(), 0, shape.n, 0, false};
    gemm.c = {c.storage().impl(), 0, shape.n, 0, false};
    const double tolerance = 1e-5 * static_cast<double>(shape.k) + 1e-4;
    const auto correct = [&] {
      const std::vector<float> got = c.to_vector<float>(stream_);
      for (size_t i = 0; i < got.size(); ++i)
        if (!(std::fabs(got[i] - reference[i]) <= tolerance)) return false;
      return true;
    };
    const auto clear = [&] { stream_.fill(c.storage(), uint8_t{0xff}, c.nbytes()); };  // NaNs

    TuneEntry entry;
    entry.op = "matmul";
    entry.dtype = "f32";
    entry.shape_class = shape_class;
    std::vector<ops::Candidate> candidates;
    for (const ops::GemmParams& params : ops::gemm_candidates(info_))
      candidates.push_back(
          {params.text(), [&, params] { ops::portable_gemm(gemm, params, stream_); }});
    search(entry, candidates, clear, correct);
    const ops::SearchOutcome vendor =
        ops::search_candidates({{ops::vendor_blas(info_), [&] { stream_.impl()->gemm(gemm); }}},
                               clear, correct, stream_, 0, 1);
    entry.vendor_ms = vendor.best_ms;
    entry.choice = entry.vendor_ms > 0 && (entry.hal_ms <= 0 || entry.vendor_ms < entry.hal_ms)
                       ? ops::vendor_blas(info_)
                       : "hal";
    return entry;
  }

  TuneEntry reduce(int64_t count, const std::string& shape_class) {
    const Tensor x = uniform({count}, DType::f32, 13, stream_, 0, 1);
    const Tensor out = empty({}, DType::f32, device_);
    double reference = 0;
    for (float v : x.to_vector<float>(stream_)) reference += v;
    const ops::ReduceLayout layout = ops::reduce_layout(x, {true});
    const auto correct = [&] {
      const double got = out.to_vector<float>(stream_)[0];
      return std::fabs(got - reference) <= 1e-4 * std::fabs(reference) + 1e-3;
    };
    std::vector<ops::ReduceParams> params{ops::default_reduce_params(info_)};
    for (bool runs : {params[0].item_runs, !params[0].item_runs})
      for (uint32_t group : {256u, 64u, 16u})
        for (uint32_t per_unit : {1u, 2u, 4u, 8u}) {
          const ops::ReduceParams p{group, per_unit, runs};
          if (std::find(params.begin(), params.end(), p) == params.end()) params.push_back(p);
        }
    std::vector<ops::Candidate> candidates;
    for (const ops::ReduceParams& p : params)
      candidates.push_back({p.text(), [&, p] {
                              ops::portable_reduce(ops::Reduce::sum, x, out, layout, p, stream_);
                            }});
    TuneEntry entry;
    entry.op = "reduce";
    entry.dtype = "f32";
    entry.shape_class = shape_class;
    search(
        entry, candidates, [&] { stream_.fill(out.storage(), uint8_t{0xff}, out.nbytes()); },
        correct);
    entry.choice = "hal";
    return entry;
  }

  void set_classes_left(size_t left) { classes_left_ = left; }

 private:
  // This class's share of what is left of the budget.
  void search(TuneEntry& entry, const std::vector<ops::Candidate>& candidates,
              const std::function<void()>& reset, const std::function<bool()>& correct) {
    const double share = std::chrono::duration<double>(deadline_ - Clock::now()).count() /
                         static_cast<double>(std::max<size_t>(classes_left_, 1));
    const ops::SearchOutcome outcome = ops::search_candidates(
        candidates, reset, correct, stream_, std::max(share, 0.0), options_.max_candidates);
    entry.candidates_tried = outcome.tried;
    entry.candidates_rejected = outcome.rejected;
    entry.default_ms = outcome.default_ms;
    entry.hal_ms = outcome.best_ms;
    if (outcome.best >= 0) entry.params = candidates[static_cast<size_t>(outcome.best)].text;
    exhausted_ = exhausted_ || outcome.cut_short;
    if (classes_left_ > 0) --classes_left_;
  }

  Device device_;
  const DeviceInfo& info_;
  const TuneOptions& options_;
  Clock::time_point start_, deadline_;
  Stream stream_, cpu_stream_;
  size_t classes_left_ = 1;
  bool exhausted_ = false;
};

void check(const Device& device, const TuneOptions& options) {
  const DeviceInfo& info = device.info();
  if (!info.has_feature(feature::kPortableKernels))
    throw Error(ErrorCode::Unsupported, "hal tune: " + info.id +
                                            " compiles no portable kernels, so hal has no "
                                            "kernel of its own to tune there (OpenCL and CUDA do)");
  for (const std::string& op : options.ops)
    if (op != "matmul" && op != "reduce")
      throw Error(ErrorCode::InvalidArgument,
                  "hal tune: unknown op '" + op + "' (matmul and reduce are tuned)");
  for (const TuneShape& s : options.matmul_shapes)
    if (s.m <= 0 || s.n <= 0 || s.k <= 0)
      throw Error(ErrorCode::InvalidArgument, "hal tune: matmul shape " + std::to_string(s.m) +
                                                  "x" + std::to_string(s.n) + "x" +
                                                  std::to_string(s.k) + " has a size below 1");
  for (int64_t count : options.reduce_counts)
    if (count <= 0)
      throw Error(ErrorCode::InvalidArgument,
                  "hal tune: reduce count " + std::to_string(count) + " is below 1");
  if (options.budget.count() <= 0)
    throw Error(ErrorCode::InvalidArgument, "hal tune: the budget must be positive");
}

}  // namespace

TuneReport tune(const Device& device, const TuneOptions& options) {
  check(device, options);
  const DeviceInfo& info = device.info();
  const Clock::time_point start = Clock::now();
  ops::TuningTable table = *ops::tuning_table(info);
  table.key = ops::tuning_key(info);

  const auto wants = [&](const char* op) {
    return std::find(options.ops.begin(), options.ops.end(), op) != options.ops.end();
  };
  std::vector<TuneShape> shapes = options.matmul_shapes;
  if (shapes.empty()) shapes = {{256, 256, 256}, {1024, 1024, 1024}, {2048, 2048, 2048}};
  std::vector<int64_t> counts = options.reduce_counts;
  if (counts.empty()) counts = {int64_t{1} << 20, int64_t{1} << 26};

  struct Job {
    bool matmul;
    TuneShape shape;
    std::string shape_class;
  };
  std::vector<Job> jobs;
  if (wants("matmul"))
    for (const TuneShape& s : shapes) {
      GemmDesc gemm;
      gemm.m = s.m;
      gemm.n = s.n;
      gemm.k = s.k;
      jobs.push_back({true, s, ops::gemm_shape_class(gemm)});
    }
  if (wants("reduce"))
    for (int64_t count : counts)
      jobs.push_back(
          {false, {count, 1, 1}, ops::reduce_shape_class(1, static_cast<uint64_t>(count))});

  TuneReport report;
  report.device = info.id;
  Tuner tuner(device, options);
  size_t to_search = 0;
  for (const Job& job : jobs)
    if (options.retune || !table.find(job.matmul ? "matmul" : "reduce", "f32", job.shape_class))
      ++to_search;
  tuner.set_classes_left(to_search);
  std::vector<TuneEntry> fresh;
  for (const Job& job : jobs) {
    const std::string op = job.matmul ? "matmul" : "reduce";
    if (const TuneEntry* cached = table.find(op, "f32", job.shape_class);
        cached && !options.retune) {
      report.entries.push_back(*cached);
      report.entries.back().from_cache = true;
      continue;
    }
    const TuneEntry entry = job.matmul ? tuner.matmul(job.shape, job.shape_class)
                                       : tuner.reduce(job.shape.m, job.shape_class);
    std::erase_if(table.entries, [&](const TuneEntry& e) {
      return e.op == entry.op && e.dtype == entry.dtype && e.shape_class == entry.shape_class;
    });
    table.entries.push_back(entry);
    report.entries.push_back(entry);
    fresh.push_back(entry);
  }
  report.budget_exhausted = tuner.exhausted();
  if (const std::filesystem::path file = ops::tuning_file(info.uuid); !file.empty()) {
    // Merged with what another process may have saved since this one read the file. A cache
    // that cannot be written loses the search for later processes only: this one keeps it.
    try {
      if (to_search > 0) table = ops::merge_and_save_tuning(file, table, fresh);
      report.cache_file = file.string();
    } catch (const Error& error) {
      report.cache_problem = error.message();
      log(LogLevel::warn, "hal tune: the tuning of " + info.id +
                              " is kept in this process only: " + report.cache_problem);
    }
  } else {
    report.cache_problem = "no cache directory (set HAL_CACHE_DIR, XDG_CACHE_HOME or HOME)";
  }
  ops::remember_tuning(info, std::move(table));
  report.seconds = seconds_since(start);
  return report;
}

}  // namespace hal
