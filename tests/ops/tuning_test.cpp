// hal tune and what it feeds: the tuning cache's keys (a changed driver version, hal version or
// kernel hash makes a table stale), nearest classes, the search's check of every candidate
// against cpu:0, hal's GEMM and the two-stage reductions on opencl:0 against cpu:0.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/declared_signature.hpp"
#include "core/embedded_kernels.hpp"
#include "core/kernel_arg_check.hpp"
#include "gemm_desc.hpp"
#include "hal/tune.hpp"
#include "ops/candidate_search.hpp"
#include "ops/gemm_choice.hpp"
#include "ops/portable_defines.hpp"
#include "ops/portable_gemm.hpp"
#include "ops/reduce_params.hpp"
#include "ops/shape_class.hpp"
#include "ops/tuning_store.hpp"
#include "test_util.hpp"

namespace hal::ops {
namespace {

namespace fs = std::filesystem;

TuneEntry entry(const std::string& op, const std::string& shape_class, const std::string& params) {
  TuneEntry e;
  e.op = op;
  e.dtype = "f32";
  e.shape_class = shape_class;
  e.choice = "hal";
  e.params = params;
  e.hal_ms = 1.5;
  e.default_ms = 2.5;
  e.candidates_tried = 3;
  return e;
}

class TuningStoreTest : public ::testing::Test {
 protected:
  test::ScratchDir scratch_{"hal-tuning", test::ScratchDir::Made::no};
  fs::path dir_ = scratch_.path();
  fs::path file_ = dir_ / "tuning" / "device.json";
  TuningKey key_{"0123-uuid", "PoCL 3.1", "0.9.0", 0x1234abcd5678ef00ULL};
};

TEST_F(TuningStoreTest, ATableComesBackUnderItsOwnKeyOnly) {
  TuningTable table{key_,
                    {entry("matmul", "NN m256 n256 k256", "direct 8x32 v16"),
                     entry("reduce", "outputs1 count1048576", "group 256 x4")}};
  save_tuning(file_, table);
  const std::optional<TuningTable> same = load_tuning(file_, key_);
  ASSERT_TRUE(same);
  ASSERT_EQ(same->entries.size(), 2u);
  EXPECT_EQ(same->entries[0].params, "direct 8x32 v16");
  EXPECT_EQ(same->entries[1].shape_class, "outputs1 count1048576");
  EXPECT_EQ(same->entries[0].default_ms, 2.5);

  TuningKey driver = key_;
  driver.driver_version = "PoCL 3.2";
  EXPECT_FALSE(load_tuning(file_, driver));
  TuningKey kernels = key_;
  kernels.kernel_hash ^= 1;
  EXPECT_FALSE(load_tuning(file_, kernels));
  TuningKey hal = key_;
  hal.hal_version = "0.9.1";
  EXPECT_FALSE(load_tuning(file_, hal));
  TuningKey device = key_;
  device.uuid = "another";
  EXPECT_FALSE(load_tuning(file_, device));

  std::ofstream(file_, std::ios::trunc) << "{\"schema\": \"hal.tuning/1\", \"key\": 3}";
  EXPECT_FALSE(load_tuning(file_, key_));  // damaged: ignored, never trusted
  EXPECT_FALSE(load_tuning(dir_ / "missing.json", key_));
}

// Two processes tuning one device at once each read the file first and saved their whole table
// last: the later save dropped the other's classes. A save now merges with the file, under a
// lock; here from 8 threads, each adding its own class to a table read before any saved.
TEST_F(TuningStoreTest, ConcurrentSavesKeepEachOthersClasses) {
  const TuningTable start{key_, {entry("matmul", "NN m256 n256 k256", "direct 8x32 v16")}};
  save_tuning(file_, start);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      TuningTable mine = start;  // as read before the others saved
      const TuneEntry fresh = entry("reduce", "outputs1 count" + std::to_string(t), "group 256");
      mine.entries.push_back(fresh);
      merge_and_save_tuning(file_, mine, {fresh});
    });
  for (std::thread& t : threads) t.join();
  const std::optional<TuningTable> saved = load_tuning(file_, key_);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->entries.size(), 9u);
  for (int t = 0; t < 8; ++t)
    EXPECT_TRUE(saved->find("reduce", "f32", "outputs1 count" + std::to_string(t))) << t;
  // A fresh entry replaces the file's for its class; the others stay.
  const TuneEntry better = entry("matmul", "NN m256 n256 k256", "tiled 16x16");
  const TuningTable merged = merge_and_save_tuning(file_, start, {better});
  EXPECT_EQ(merged.entries.size(), 9u);
  EXPECT_EQ(load_tuning(file_, key_)->find("matmul", "f32", "NN m256 n256 k256")->params,
            "tiled 16x16");
}

TEST(TuningKey, NamesTheDeviceDriverHalAndKernels) {
  DeviceInfo info;
  info.uuid = "u";
  info.driver_version = "d1";
  const TuningKey key = tuning_key(info);
  EXPECT_EQ(key.uuid, "u");
  EXPECT_EQ(key.driver_version, "d1");
  EXPECT_FALSE(key.hal_version.empty());
  EXPECT_NE(key.kernel_hash, 0u);
  info.driver_version = "d2";
  EXPECT_FALSE(tuning_key(info) == key);
}

TEST(ShapeClass, UntunedShapesTakeTheNearestTunedClass) {
  GemmDesc gemm;
  gemm.m = 1900;
  gemm.n = 2000;
  gemm.k = 2048;
  EXPECT_EQ(gemm_shape_class(gemm), "NN m2048 n2048 k2048");
  gemm.b.transposed = true;
  gemm.m = 1;
  EXPECT_EQ(gemm_shape_class(gemm), "NT m1 n2048 k2048");

  const TuningTable table{{},
                          {entry("matmul", "NN m256 n256 k256", "direct 4x16 v16"),
                           entry("matmul", "NN m2048 n2048 k2048", "direct 8x32 v16"),
                           entry("reduce", "outputs1 count1048576", "group 64 x2")}};
  EXPECT_EQ(nearest_entry(table, "matmul", "f32", "NN m2048 n2048 k1024")->params,
            "direct 8x32 v16");
  EXPECT_EQ(nearest_entry(table, "matmul", "f32", "NN m128 n256 k512")->params, "direct 4x16 v16");
  EXPECT_EQ(nearest_entry(table, "matmul", "f32", "NN m256 n256 k256")->params, "direct 4x16 v16");
  EXPECT_EQ(nearest_entry(table, "reduce", "f32", "outputs1 count67108864")->params, "group 64 x2");
  EXPECT_EQ(nearest_entry(table, "matmul", "f64", "NN m256 n256 k256"), nullptr);
}

// Ops ask for the nearest entry on every call, and each thread remembers its answers: a table
// the store replaces (a new tuning, forget_tunings) must be asked again, never answered from
// what the thread remembered of the old one.
TEST(ShapeClass, RememberedAnswersFollowTheStoresTable) {
  DeviceInfo device;
  device.id = "opencl:9";
  device.uuid = "remembered-answers-test";
  device.kind = DeviceKind::gpu;
  device.limits.max_work_group_size = 1024;
  GemmDesc gemm;
  gemm.m = gemm.n = gemm.k = 256;
  gemm.dtype = DType::f32;
  const auto tuned = [&](const std::string& params) {
    return TuningTable{{}, {entry("matmul", "NN m256 n256 k256", params)}};
  };
  remember_tuning(device, tuned("tiled 32x32x8 wg8x8 v1"));
  for (int i = 0; i < 3; ++i) {
    const GemmChoice choice = gemm_choice(device, gemm);
    EXPECT_TRUE(choice.own_kernel);
    EXPECT_EQ(choice.params.text(), "tiled 32x32x8 wg8x8 v1");
  }
  remember_tuning(device, tuned("tiled 64x64x16 wg16x16 v1"));
  EXPECT_EQ(gemm_choice(device, gemm).params.text(), "tiled 64x64x16 wg16x16 v1");
  TuningTable vendor = tuned("tiled 64x64x16 wg16x16 v1");
  vendor.entries[0].choice = "CLBlast";
  remember_tuning(device, vendor);
  EXPECT_FALSE(gemm_choice(device, gemm).own_kernel);
  forget_tunings();
}

TEST(GemmParams, TextRoundTripsAndUnusableOnesSayWhy) {
  for (const char* text : {"direct 8x32 v16", "tiled 64x64x16 wg16x16 v4"})
    EXPECT_EQ(GemmParams::parse(text)->text(), text);
  for (const char* text : {"group 256 x4", "group 16 x8 runs"})
    EXPECT_EQ(ReduceParams::parse(text)->text(), text);
  EXPECT_FALSE(ReduceParams::parse("group 16 x8 walks"));
  EXPECT_FALSE(GemmParams::parse("direct 8x32"));
  EXPECT_FALSE(GemmParams::parse("tiled 64x64x16 wg16x16 v4 extra"));
  DeviceInfo info;
  info.id = "opencl:9";
  info.limits.max_work_group_size = 64;
  const std::optional<std::string> big =
      unusable(*GemmParams::parse("tiled 64x64x16 wg16x16 v1"), info);
  ASSERT_TRUE(big);
  EXPECT_NE(big->find("work-group of 256 items"), std::string::npos) << *big;
  EXPECT_NE(big->find("opencl:9"), std::string::npos) << *big;
  EXPECT_TRUE(unusable(*GemmParams::parse("direct 8x24 v16"), info));  // 24 % 16
  info.id = "cuda:0";
  EXPECT_TRUE(unusable(*GemmParams::parse("direct 8x32 v4"), info));  // no vectors there
}

// A candidate whose result is wrong never wins, however fast: here the wrong one writes 1 where
// 2 is right, and does nothing else.
TEST(CandidateSearch, AWrongResultIsRejectedBeforeItIsTimed) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  const Buffer out = cpu.allocate(4096);
  const auto slow_right = [&] {
    for (int i = 0; i < 20; ++i) stream.fill(out, 2.0f, 1024);
  };
  const std::vector<Candidate> candidates{
      {"right, slow", slow_right},
      {"wrong, fast", [&] { stream.fill(out, 1.0f, 1024); }},
      {"throws", [] { throw Error(ErrorCode::Unsupported, "no such kernel"); }}};
  int checks = 0;
  const SearchOutcome outcome = search_candidates(
      candidates, [&] { stream.fill(out, 0.0f, 1024); },
      [&] {
        ++checks;
        const float* values = out.data<float>();
        for (int i = 0; i < 1024; ++i)
          if (values[i] != 2.0f) return false;
        return true;
      },
      stream, 60, 0);
  EXPECT_EQ(outcome.best, 0);
  EXPECT_EQ(outcome.tried, 3);
  EXPECT_EQ(outcome.rejected, 2);
  EXPECT_EQ(checks, 2);  // every candidate that ran was checked
  EXPECT_GT(outcome.best_ms, 0);
  EXPECT_EQ(outcome.default_ms, outcome.best_ms);
}

// A candidate's first run builds its kernel (and PoCL compiles again at a kernel's first
// launch), which takes many times the run itself. Timed, it made every candidate after the
// default look over three times slower than the best and go untimed: `hal tune` kept the
// default. Here a candidate 40 ms slow on its first run only, then faster than the default.
TEST(CandidateSearch, TheFirstRunBuildsTheCandidateAndIsNotTimed) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  const Buffer out = cpu.allocate(4096);
  int builds = 0;
  const std::vector<Candidate> candidates{
      {"default, 10 ms",
       [&] {
         std::this_thread::sleep_for(std::chrono::milliseconds(10));
         stream.fill(out, 2.0f, 1024);
       }},
      {"slow to build, then fast",
       [&] {
         if (builds++ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(40));
         stream.fill(out, 2.0f, 1024);
       }},
      {"slow", [&] {
         std::this_thread::sleep_for(std::chrono::milliseconds(45));
         stream.fill(out, 2.0f, 1024);
       }}};
  int slow_runs = 0;
  std::vector<Candidate> counted = candidates;
  counted[2].run = [&] {
    ++slow_runs;
    candidates[2].run();
  };
  const SearchOutcome outcome = search_candidates(
      counted, [&] { stream.fill(out, 0.0f, 1024); },
      [&] { return out.data<float>()[1023] == 2.0f; }, stream, 60, 0);
  EXPECT_EQ(outcome.tried, 3);
  EXPECT_EQ(outcome.rejected, 0);
  EXPECT_EQ(outcome.best, 1) << "best " << outcome.best_ms << " ms, default " << outcome.default_ms
                             << " ms";
  EXPECT_LT(outcome.best_ms, 10);
  EXPECT_GE(outcome.default_ms, 10);
  EXPECT_GE(builds, 4);  // built and checked once, then timed at least three times
  // Over three times the best at its first timed run: not timed further (1 untimed + 1 timed).
  EXPECT_EQ(slow_runs, 2);
}

// Where the driver reflects no signature (CUDA), launches are checked against the one the
// source declares: the new kernels' entry points must stay readable, so that a launch with a
// wrong count or size of arguments is refused by name before it reaches the driver.
TEST(KernelSignatures, GemmAndTwoStageReductionsAreCheckedOnEveryBackend) {
  const auto params = [](const char* program, const char* entry, std::vector<std::string> defines) {
    return detail::declared_params(
        {entry, std::string(embedded_kernel(program)), KernelLanguage::portable},
        {.defines = defines});
  };
  const auto gemm =
      params("ops/gemm", "gemm", {"VALUE_T=float", "TILE_M=8", "TILE_N=32", "VEC=1", "DIRECT"});
  ASSERT_TRUE(gemm);
  ASSERT_EQ(gemm->size(), 17u);  // C, A, B, 12 sizes and strides, the epilogue's bias
  EXPECT_EQ((*gemm)[0].kind, KernelArg::Kind::buffer);
  EXPECT_EQ((*gemm)[14].scalar_bytes, 8u);
  EXPECT_EQ((*gemm)[15].kind, KernelArg::Kind::buffer);
  std::vector<KernelArg> args{Buffer(), Buffer(), Buffer()};
  for (int i = 0; i < 12; ++i) args.emplace_back(uint64_t{1});
  args.emplace_back(Buffer());
  args.emplace_back(uint64_t{0});
  EXPECT_EQ(detail::argument_mismatch(*gemm, args), std::nullopt);
  args.pop_back();
  EXPECT_NE(detail::argument_mismatch(*gemm, args)->find("takes 17 arguments, 16 given"),
            std::string::npos);
  args.emplace_back(0u);  // a 4-byte bias offset where the kernel takes 8 bytes
  EXPECT_NE(detail::argument_mismatch(*gemm, args)->find("argument 16 (bias_offset)"),
            std::string::npos);

  const std::vector<std::string> sum{"OP_SUM", "GROUP=64", "VALUE_T=float", "ACC_T=float"};
  const auto partial = params("ops/reduce", "reduce_partial", sum);
  ASSERT_TRUE(partial);
  EXPECT_EQ(partial->size(), 31u);  // 3 buffers, offset, count, split, chunk, 24 dims
  const auto final_pass = params("ops/reduce", "reduce_final", sum);
  ASSERT_TRUE(final_pass);
  EXPECT_EQ(final_pass->size(), 6u);
  const auto one_pass = params("ops/reduce", "reduce", sum);
  ASSERT_TRUE(one_pass);
  EXPECT_EQ(one_pass->size(), 28u);
}

// The row kernels' signatures as CUDA checks launches against them: eps is value_t (4 bytes in
// f32, 8 in f64, as portable_rowwise.cpp passes it), the rest buffers and 8-byte counts.
TEST(KernelSignatures, RowKernelsDeclareEpsInTheirOwnType) {
  const auto params = [](const char* entry, std::string_view op, DType dtype) {
    return detail::declared_params(
        {entry, std::string(embedded_kernel("ops/rowwise")), KernelLanguage::portable},
        {.defines = ops::rowwise_defines(op, dtype, 64)});
  };
  for (const auto& [dtype, eps_bytes] : {std::pair{DType::f32, 4u}, std::pair{DType::f64, 8u}}) {
    SCOPED_TRACE(to_string(dtype));
    const auto rowwise = params("rowwise", "layer_norm", dtype);
    ASSERT_TRUE(rowwise);
    ASSERT_EQ(rowwise->size(), 11u);  // out, x, weight, bias, 4 offsets, cols, eps, flags
    EXPECT_EQ((*rowwise)[3].kind, KernelArg::Kind::buffer);
    EXPECT_EQ((*rowwise)[9].scalar_bytes, eps_bytes);
    EXPECT_EQ((*rowwise)[10].scalar_bytes, 8u);
    const auto rows = params("norm_backward_rows", "", dtype);
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 12u);  // dx, stats, x, grad, weight, 4 offsets, cols, eps, flags
    EXPECT_EQ((*rows)[10].scalar_bytes, eps_bytes);
    const auto columns = params("norm_backward_columns", "", dtype);
    ASSERT_TRUE(columns);
    EXPECT_EQ(columns->size(), 12u);  // 2 parts, x, grad, stats, 2 offsets, 5 counts and flags
    const auto final_pass = params("norm_backward_final", "", dtype);
    ASSERT_TRUE(final_pass);
    EXPECT_EQ(final_pass->size(), 9u);
  }
}

TEST(Tune, RefusesWhatItCannotTune) {
  test::expect_error([] { tune(device("cpu:0")); }, ErrorCode::Unsupported,
                     {"hal tune", "cpu:0", "compiles no portable kernels"});
}

// The rest needs opencl:0.
class OpenClTuning : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<Device> opencl = test::backend_devices("opencl");
    if (opencl.empty()) GTEST_SKIP() << "no opencl:0: " << test::backend_reason("opencl");
    device_ = opencl.front();
    forget_tunings();
  }
  void TearDown() override { forget_tunings(); }

  // C = A x B on `device_` through hal's GEMM with `params`, against cpu:0's OpenBLAS.
  void expect_gemm_matches_cpu(const GemmParams& params, int64_t m, int64_t n, int64_t k,
                               bool transpose_b) {
    Stream stream = device_.create_stream();
    const Device cpu = device("cpu:0");
    Stream cpu_stream = cpu.create_stream();
    const Tensor a = uniform({m, k}, DType::f32, 1, stream, -1, 1);
    const Tensor b = uniform(transpose_b ? Shape{n, k} : Shape{k, n}, DType::f32, 2, stream, -1, 1);
    const Tensor c = empty({m, n}, DType::f32, device_);
    portable_gemm(test::row_major_gemm(a, b, c, transpose_b), params, stream);
    const Tensor a_cpu = a.to(cpu, stream), b_cpu = b.to(cpu, stream);
    stream.synchronize();  // the copies land before cpu:0's stream reads them
    const std::vector<float> want =
        matmul(a_cpu, transpose_b ? b_cpu.transpose(0, 1) : b_cpu, cpu_stream)
            .to_vector<float>(cpu_stream);
    const std::vector<float> got = c.to_vector<float>(stream);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * static_cast<double>(k)) << params.text() << " at " << i;
  }

  Device device_;
};

TEST_F(OpenClTuning, EveryCandidateKindMultipliesLikeTheCpu) {
  const DeviceInfo& info = device_.info();
  for (const char* text :
       {"direct 8x32 v16", "direct 6x16 v8", "tiled 32x32x8 wg8x8 v1", "tiled 32x64x16 wg8x8 v4"}) {
    const GemmParams params = *GemmParams::parse(text);
    if (unusable(params, info)) continue;
    expect_gemm_matches_cpu(params, 37, 70, 45, false);  // edges in every direction
    expect_gemm_matches_cpu(params, 64, 64, 16, true);
  }
}

// bf16 and f16 operands are converted to f32 in registers and summed in f32: the result is the
// f32 product of the rounded inputs, rounded once.
TEST_F(OpenClTuning, ReducedPrecisionSumsInF32) {
  Stream stream = device_.create_stream();
  const Device cpu = device("cpu:0");
  Stream cpu_stream = cpu.create_stream();
  for (DType dtype : {DType::bf16, DType::f16}) {
    if (dtype == DType::f16 && !device_.info().has_feature(feature::kFp16)) continue;
    const int64_t m = 19, n = 40, k = 300;
    const Tensor a = cast(uniform({m, k}, DType::f32, 3, stream, -1, 1), dtype, stream);
    const Tensor b = cast(uniform({k, n}, DType::f32, 4, stream, -1, 1), dtype, stream);
    const Tensor c = empty({m, n}, dtype, device_);
    const GemmDesc gemm = test::row_major_gemm(a, b, c);
    for (const char* text : {"direct 8x32 v16", "tiled 32x32x8 wg8x8 v1"}) {
      portable_gemm(gemm, *GemmParams::parse(text), stream);
      const Tensor got = cast(c, DType::f32, stream).to(cpu, stream);
      const Tensor a_cpu = cast(a, DType::f32, stream).to(cpu, stream);
      const Tensor b_cpu = cast(b, DType::f32, stream).to(cpu, stream);
      stream.synchronize();
      const std::vector<float> want = matmul(a_cpu, b_cpu, cpu_stream).to_vector<float>(cpu_stream);
      const std::vector<float> g = got.to_vector<float>(cpu_stream);
      const double unit = dtype == DType::bf16 ? 1.0 / 128 : 1.0 / 1024;  // half an ulp, x2
      for (size_t i = 0; i < g.size(); ++i)
        ASSERT_NEAR(g[i], want[i], unit * std::fabs(want[i]) + 1e-4)
            << to_string(dtype) << " " << text << " at " << i;
    }
  }
}

TEST_F(OpenClTuning, TunedParametersAreCheckedKeptAndReused) {
  test::ScopedCacheDir cache("opencl");
  TuneOptions options;
  options.ops = {"matmul"};
  options.matmul_shapes = {{48, 80, 40}};
  options.max_candidates = 3;
  options.budget = std::chrono::seconds(120);
  const TuneReport first = tune(device_, options);
  ASSERT_EQ(first.entries.size(), 1u);
  const TuneEntry& tuned = first.entries[0];
  EXPECT_FALSE(tuned.from_cache);
  EXPECT_EQ(tuned.shape_class, "NN m64 n128 k64");
  EXPECT_GE(tuned.candidates_tried, 1);
  EXPECT_LE(tuned.candidates_tried, 3);
  EXPECT_EQ(tuned.candidates_rejected, 0);
  EXPECT_GT(tuned.default_ms, 0);
  EXPECT_LE(tuned.hal_ms, tuned.default_ms);
  EXPECT_TRUE(tuned.choice == "hal" || tuned.choice == vendor_blas(device_.info()));
  if (tuned.vendor_ms > 0) {
    EXPECT_EQ(tuned.choice == "hal", tuned.hal_ms <= tuned.vendor_ms);
  }
  ASSERT_TRUE(GemmParams::parse(tuned.params));
  expect_gemm_matches_cpu(*GemmParams::parse(tuned.params), 48, 80, 40, false);
  ASSERT_TRUE(fs::exists(first.cache_file));

  // A process that starts afresh reads the table and searches nothing.
  forget_tunings();
  const TuneReport again = tune(device_, options);
  ASSERT_EQ(again.entries.size(), 1u);
  EXPECT_TRUE(again.entries[0].from_cache);
  EXPECT_EQ(again.entries[0].params, tuned.params);
  EXPECT_EQ(again.entries[0].hal_ms, tuned.hal_ms);

  // matmul follows the table for this class and the nearest one.
  GemmDesc gemm;
  gemm.dtype = DType::f32;
  gemm.m = 48;
  gemm.n = 80;
  gemm.k = 40;
  const GemmChoice choice = gemm_choice(device_.info(), gemm);
  EXPECT_EQ(choice.own_kernel, tuned.choice == "hal");
  EXPECT_EQ(choice.params.text(), tuned.params);
  gemm.m = 3000;
  EXPECT_EQ(gemm_choice(device_.info(), gemm).params.text(), tuned.params);
}

TEST_F(OpenClTuning, AStaleTableIsSearchedAgain) {
  test::ScopedCacheDir cache("opencl");
  TuneOptions options;
  options.ops = {"reduce"};
  options.reduce_counts = {100000};
  options.max_candidates = 2;
  const TuneReport first = tune(device_, options);
  ASSERT_EQ(first.entries.size(), 1u);
  EXPECT_EQ(first.entries[0].candidates_rejected, 0);
  // The same table, as if made by another driver.
  TuningTable table = *load_tuning(first.cache_file, tuning_key(device_.info()));
  table.key.driver_version += " (older)";
  save_tuning(first.cache_file, table);
  forget_tunings();
  EXPECT_TRUE(tuning_table(device_.info())->entries.empty());
  const TuneReport again = tune(device_, options);
  EXPECT_FALSE(again.entries[0].from_cache);
  EXPECT_GE(again.entries[0].candidates_tried, 1);
  EXPECT_TRUE(load_tuning(first.cache_file, tuning_key(device_.info())));  // rewritten
}

// A cache directory that cannot be written threw at the very end of `hal tune`, after the whole
// search: the tuning was lost for this process too. It is now kept in the process, and the
// report says why nothing was written.
TEST_F(OpenClTuning, AnUnwritableCacheKeepsTheTuningInTheProcess) {
  test::ScratchDir scratch("hal-tuning-unwritable");
  const fs::path blocker = scratch.path() / "a-file";
  std::ofstream(blocker) << "not a folder";
  const char* old = std::getenv("HAL_CACHE_DIR");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("HAL_CACHE_DIR", (blocker / "cache").c_str(), 1);
  TuneOptions options;
  options.ops = {"reduce"};
  options.reduce_counts = {4096};
  options.max_candidates = 1;
  TuneReport report;
  EXPECT_NO_THROW(report = tune(device_, options));
  if (saved)
    ::setenv("HAL_CACHE_DIR", saved->c_str(), 1);
  else
    ::unsetenv("HAL_CACHE_DIR");
  EXPECT_EQ(report.cache_file, "");
  EXPECT_NE(report.cache_problem.find((blocker / "cache" / "tuning").string()), std::string::npos)
      << report.cache_problem;
  EXPECT_NE(report.cache_problem.find("Not a directory"), std::string::npos)
      << report.cache_problem;
  ASSERT_EQ(report.entries.size(), 1u);
  EXPECT_EQ(report.entries[0].candidates_tried, 1);
  const TuneEntry* kept = tuning_table(device_.info())->find("reduce", "f32", "outputs1 count4096");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->params, report.entries[0].params);
}

// Few outputs of many elements run in two stages; sums, means, maxima and argmax (min shares
// max's code), contiguous and strided, match cpu:0 (argmax: the first of equal maxima).
TEST_F(OpenClTuning, TwoStageReductionsMatchTheCpu) {
  Stream stream = device_.create_stream();
  const Device cpu = device("cpu:0");
  Stream cpu_stream = cpu.create_stream();
  std::vector<float> values(3 * 50001);
  std::mt19937 random(5);
  std::uniform_real_distribution<float> draw(-1, 1);
  for (float& v : values) v = draw(random);
  values[40000] = values[40001] = values[3 * 50000] = 7.0f;  // ties for argmax
  const Tensor flat = from_vector(values, {3 * 50001}, stream);
  const Tensor rows = flat.reshape({3, 50001});
  const Tensor columns = flat.reshape({50001, 3});
  struct Case {
    const Tensor& x;
    std::vector<int64_t> axes;
  };
  for (const Case& c : {Case{flat, {0}}, Case{rows, {1}}, Case{columns, {0}}}) {
    const Tensor x_cpu = c.x.to(cpu, stream);
    stream.synchronize();
    const auto compare = [&](const Tensor& got, const Tensor& want, double tolerance) {
      const std::vector<float> g = got.to_vector<float>(stream);
      const std::vector<float> w = want.to_vector<float>(cpu_stream);
      ASSERT_EQ(g.size(), w.size());
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tolerance) << c.x.describe();
    };
    compare(sum(c.x, c.axes, false, stream), sum(x_cpu, c.axes, false, cpu_stream), 0.05);
    compare(mean(c.x, c.axes, false, stream), mean(x_cpu, c.axes, false, cpu_stream), 1e-5);
    compare(max(c.x, c.axes, false, stream), max(x_cpu, c.axes, false, cpu_stream), 0);
    EXPECT_EQ(argmax(c.x, c.axes, false, stream).to_vector<int64_t>(stream),
              argmax(x_cpu, c.axes, false, cpu_stream).to_vector<int64_t>(cpu_stream))
        << c.x.describe();
  }
  // Both ways of sharing a range among a group's items, whatever the default here.
  const Tensor want = sum(flat.to(cpu, stream), {0}, false, cpu_stream);
  stream.synchronize();
  const float expected = want.to_vector<float>(cpu_stream)[0];
  for (bool runs : {false, true}) {
    const Tensor out = empty({}, DType::f32, device_);
    portable_reduce(Reduce::sum, flat, out, reduce_layout(flat, {true}), ReduceParams{64, 4, runs},
                    stream);
    EXPECT_NEAR(out.to_vector<float>(stream)[0], expected, 0.05) << (runs ? "runs" : "strided");
  }
}

}  // namespace
}  // namespace hal::ops
