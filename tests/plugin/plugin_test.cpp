// Plugins through hal: the simulated accelerator (plugins/sim) as a backend like any other, and
// plugins that fail to load in every way hal must survive. CTest runs this binary with
// HAL_PLUGIN_PATH naming the folder of test plugins and HAL_SIM_CONFIG set per test group
// (the fault tests each get their own process and configuration).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/uuid.hpp"
#include "hal/hal.hpp"
#include "hal/ops.hpp"
#include "hal/plugin.h"
#include "hal/plugin_discovery.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

const PluginInfo* find_plugin(const std::vector<PluginInfo>& all, const std::string& file) {
  for (const PluginInfo& info : all)
    if (info.path.ends_with(file)) return &info;
  return nullptr;
}

std::vector<float> floats(std::initializer_list<float> values) { return values; }

// sim's function table from the library hal loaded (RTLD_NOLOAD: never a second copy), for
// calls as any caller of the ABI makes them, without hal's checks of its tensors in front.
const hal_plugin_api* sim_api() {
  const auto all = plugins();
  const PluginInfo* sim = find_plugin(all, "libhal_plugin_sim.so");
  if (sim == nullptr) return nullptr;
  void* library = dlopen(sim->path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return nullptr;
  const auto init = reinterpret_cast<hal_plugin_init_fn>(dlsym(library, HAL_PLUGIN_INIT_SYMBOL));
  const hal_plugin_host_info host{sizeof host, HAL_PLUGIN_ABI_MAJOR, HAL_PLUGIN_ABI_MINOR, "test",
                                  sim->path.c_str()};
  const hal_plugin_api* api = nullptr;
  const bool ready = init != nullptr && init(&host, &api) == HAL_STATUS_OK;
  dlclose(library);  // hal's own handle keeps it loaded
  return ready ? api : nullptr;
}

// A view of `buffer` for sim's built-in ops: element offset, shape and strides in elements.
hal_plugin_tensor sim_view(hal_plugin_buffer buffer, uint64_t offset, std::vector<int64_t> shape,
                           std::vector<int64_t> strides,
                           hal_plugin_dtype dtype = HAL_PLUGIN_DTYPE_F32) {
  hal_plugin_tensor t{};
  t.struct_size = sizeof t;
  t.buffer = buffer;
  t.offset = offset;
  t.dtype = dtype;
  t.rank = static_cast<uint32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape);
  std::copy(strides.begin(), strides.end(), t.strides);
  return t;
}

TEST(Plugins, EveryCandidateIsListedWithWhyItLoadedOrNot) {
  const auto all = plugins();
  const PluginInfo* sim = find_plugin(all, "libhal_plugin_sim.so");
  ASSERT_NE(sim, nullptr) << "the bundled folder next to libhal holds sim";
  EXPECT_TRUE(sim->loaded) << sim->reason;
  EXPECT_EQ(sim->name, "sim");
  EXPECT_EQ(sim->abi_version,
            std::to_string(HAL_PLUGIN_ABI_MAJOR) + "." + std::to_string(HAL_PLUGIN_ABI_MINOR));

  const PluginInfo* major = find_plugin(all, "libbroken_major.so");
  ASSERT_NE(major, nullptr);
  EXPECT_FALSE(major->loaded);
  const std::string this_abi = "this hal speaks " + std::to_string(HAL_PLUGIN_ABI_MAJOR) + "." +
                               std::to_string(HAL_PLUGIN_ABI_MINOR);
  for (const std::string& part :
       {std::string("PluginAbiMismatch"), std::string("speaks plugin ABI 2.0"), this_abi})
    EXPECT_NE(major->reason.find(part), std::string::npos) << major->reason;

  const PluginInfo* init = find_plugin(all, "libbroken_init.so");
  ASSERT_NE(init, nullptr);
  EXPECT_FALSE(init->loaded);
  for (const char* part : {"hal_plugin_init failed", "BackendUnavailable", "no such hardware"})
    EXPECT_NE(init->reason.find(part), std::string::npos) << init->reason;

  const PluginInfo* entry = find_plugin(all, "libbroken_no_entry.so");
  ASSERT_NE(entry, nullptr);
  EXPECT_FALSE(entry->loaded);
  EXPECT_NE(entry->reason.find("exports no hal_plugin_init"), std::string::npos) << entry->reason;

  const PluginInfo* table = find_plugin(all, "libbroken_table.so");
  ASSERT_NE(table, nullptr);
  EXPECT_FALSE(table->loaded);
  for (const char* part :
       {"BackendUnavailable", "libbroken_table.so", "required function device_count", "NULL"})
    EXPECT_NE(table->reason.find(part), std::string::npos) << table->reason;

  // A C++ exception out of init is that plugin's failure, not hal's.
  const PluginInfo* throws = find_plugin(all, "libbroken_throws.so");
  ASSERT_NE(throws, nullptr);
  EXPECT_FALSE(throws->loaded);
  for (const char* part : {"libbroken_throws.so", "threw while loading", "no license"})
    EXPECT_NE(throws->reason.find(part), std::string::npos) << throws->reason;

  const PluginInfo* shorter = find_plugin(all, "libbroken_short.so");
  ASSERT_NE(shorter, nullptr);
  EXPECT_FALSE(shorter->loaded);
  for (const char* part : {"PluginAbiMismatch", "its table holds 8 bytes", "ABI version"})
    EXPECT_NE(shorter->reason.find(part), std::string::npos) << shorter->reason;
  EXPECT_EQ(shorter->reason.find("this hal speaks"), std::string::npos) << shorter->reason;

  // Its init fails too: hal read last_error from past the table's 8 bytes (in a real short
  // table, whatever lay there, called as a function).
  const PluginInfo* short_init = find_plugin(all, "libbroken_short_init.so");
  ASSERT_NE(short_init, nullptr);
  EXPECT_FALSE(short_init->loaded);
  for (const char* part : {"hal_plugin_init failed", "no message"})
    EXPECT_NE(short_init->reason.find(part), std::string::npos) << short_init->reason;
  EXPECT_EQ(short_init->reason.find("past the table"), std::string::npos) << short_init->reason;

  // hip is not compiled in, yet its name stays hal's.
  const PluginInfo* hip = find_plugin(all, "libsim_named_hip.so");
  ASSERT_NE(hip, nullptr);
  EXPECT_FALSE(hip->loaded);
  for (const char* part : {"names its backend 'hip'", "a name hal keeps for a backend of its own"})
    EXPECT_NE(hip->reason.find(part), std::string::npos) << hip->reason;

  const PluginInfo* garbage = find_plugin(all, "not_a_library.so");
  ASSERT_NE(garbage, nullptr);
  EXPECT_FALSE(garbage->loaded);
  // Its ELF header is read before dlopen sees it.
  for (const char* part : {"skipped: ", "not_a_library.so is not an ELF file"})
    EXPECT_NE(garbage->reason.find(part), std::string::npos) << garbage->reason;

  // None of them stopped hal or hid another backend.
  EXPECT_NO_THROW(device("cpu:0"));
  EXPECT_NO_THROW(device("sim:0"));
}

// libbroken_key.so's init leaves a destructor of its code on the thread that ran it, and fails:
// the library must stay mapped for that thread's end (unloaded, the thread's exit crashed).
TEST(PluginsFoundOnAThread, AFailedInitLeavesItsLibraryLoadedForWhatItStarted) {
  std::vector<PluginInfo> all;
  std::thread([&] { all = plugins(); }).join();
  const PluginInfo* key = find_plugin(all, "libbroken_key.so");
  ASSERT_NE(key, nullptr);
  EXPECT_FALSE(key->loaded);
  EXPECT_NE(key->reason.find("hal_plugin_init failed"), std::string::npos) << key->reason;
  void* still = dlopen(key->path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(still, nullptr) << "hal unloaded " << key->path << " after calling its init";
  if (still) dlclose(still);
  EXPECT_NO_THROW(device("sim:0"));
}

TEST(Plugins, SimIsABackendWithDevicesThatReportTheirFacts) {
  bool listed = false;
  for (const BackendStatus& backend : Registry::instance().backends())
    if (backend.name == "sim") {
      listed = true;
      EXPECT_TRUE(backend.available) << backend.reason;
      EXPECT_EQ(backend.device_count, 3u) << "HAL_SIM_CONFIG asks for 3";
    }
  EXPECT_TRUE(listed);
  const DeviceInfo& info = device("sim:1").info();
  EXPECT_EQ(info.id, "sim:1");
  EXPECT_EQ(info.kind, DeviceKind::accelerator);
  EXPECT_EQ(info.vendor, "hal");
  EXPECT_EQ(info.memory_total.bytes, 64ull << 20);
  EXPECT_TRUE(info.supports(DType::f64));
  EXPECT_FALSE(info.supports(DType::f16));
  for (std::string_view feature :
       {feature::kBuiltinBinary, feature::kBuiltinUnary, feature::kBuiltinReduce, feature::kFp64})
    EXPECT_TRUE(info.has_feature(feature)) << feature;
  EXPECT_NE(info.uuid, device("sim:0").info().uuid);
  EXPECT_EQ(device(info.uuid).id(), "sim:1") << "found by its UUID";
}

TEST(Plugins, SimMemoryIsPrivateAndCopiesAreReal) {
  Device sim = device("sim:0");
  Stream stream = sim.create_stream();
  Buffer a = sim.allocate(4096), b = device("sim:1").allocate(4096);
  expect_error([&] { a.host_data(); }, ErrorCode::Unsupported, {"sim:0"});
  std::vector<unsigned char> in(4096), out(4096, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7);
  stream.copy_from_host(a, in.data(), in.size());
  stream.copy(b, a, 4096);  // between two devices of the plugin
  stream.copy_to_host(out.data(), b, out.size());
  stream.synchronize();
  EXPECT_EQ(out, in);
  expect_error([&] { sim.allocate(65ull << 20); }, ErrorCode::OutOfMemory,
               {"sim:0", "65.0 MiB", "64.0 MiB"});
}

TEST(Plugins, OpsRunOnSimAsOnTheCpu) {
  Device sim = device("sim:0"), cpu = device("cpu:0");
  Stream s = sim.create_stream(), c = cpu.create_stream();
  const Tensor x = uniform({4, 6}, DType::f32, 3, c, -2, 2), y = uniform({6}, DType::f32, 4, c);
  const Tensor xs = x.to(sim, c), ys = y.to(sim, c);
  c.synchronize();
  auto close = [&](const Tensor& on_sim, const Tensor& on_cpu, const char* what) {
    ASSERT_EQ(on_sim.device(), sim) << what;
    const auto got = on_sim.to_vector<float>(s), want = on_cpu.to_vector<float>(c);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << what << " " << i;
  };
  close(add(xs, ys, s), add(x, y, c), "add with broadcasting");
  close(maximum(xs.transpose(0, 1), xs.transpose(0, 1), s), x.transpose(0, 1).contiguous(c),
        "maximum of transposed views");
  close(gelu(xs, s), gelu(x, c), "gelu");
  close(sum(xs, {0}, false, s), sum(x, {0}, false, c), "sum over axis 0");
  close(max(xs, {}, true, s), max(x, {}, true, c), "max of all, keepdim");
  close(softmax(xs, -1, s), softmax(x, -1, c), "softmax, built from the others");
  close(matmul(xs, xs.transpose(0, 1), s), matmul(x, x.transpose(0, 1), c), "matmul");
  EXPECT_EQ(argmax(xs, {1}, false, s).to_vector<int64_t>(s),
            argmax(x, {1}, false, c).to_vector<int64_t>(c));
}

TEST(Plugins, WhatSimLacksIsUnsupportedUnlessFallbackIsAllowed) {
  Device sim = device("sim:0");
  Stream s = sim.create_stream();
  const Tensor x = from_vector(floats({1, 2, 3}), {3}, s);
  expect_error([&] { pow(x, x, s); }, ErrorCode::Unsupported, {"pow", "sim:0"});
  expect_error([&] { cast(x, DType::i32, s); }, ErrorCode::Unsupported, {"cast", "sim:0"});
  CpuFallback allow;
  const Tensor squares = pow(x, from_vector(floats({2, 2, 2}), {3}, s), s);
  EXPECT_EQ(squares.device(), sim);
  EXPECT_EQ(squares.to_vector<float>(s), floats({1, 4, 9}));
}

// Integer arithmetic at the limits wraps (two's complement) on sim as on cpu:0, where sim's
// kernels overflowed signed integers (undefined behaviour): INT_MAX + 1, INT_MIN - 1,
// INT_MIN * -1 and INT_MIN / -1 are INT_MIN, INT_MAX, INT_MIN, INT_MIN; x / 0 is 0; -INT_MIN
// and abs(INT_MIN) are INT_MIN.
TEST(Plugins, IntegerArithmeticOnSimWrapsAsOnTheCpu) {
  Device sim = device("sim:0"), cpu = device("cpu:0");
  Stream s = sim.create_stream(), c = cpu.create_stream();
  const auto check = [&]<class T>(T) {
    constexpr T kMax = std::numeric_limits<T>::max(), kMin = std::numeric_limits<T>::min();
    const std::vector<T> x{kMax, kMin, kMin, kMax, kMin, 7, -7, kMin};
    const std::vector<T> y{1, 1, -1, kMax, kMin, 0, 2, 0};
    const Shape shape{static_cast<int64_t>(x.size())};
    const Tensor xs = from_vector(x, shape, s), ys = from_vector(y, shape, s);
    const Tensor xc = from_vector(x, shape, c), yc = from_vector(y, shape, c);
    const auto on_sim = [&](const Tensor& result, const Tensor& on_cpu, const char* op) {
      EXPECT_EQ(result.device(), sim) << op << " ran elsewhere";
      const std::vector<T> got = result.to_vector<T>(s);
      EXPECT_EQ(got, on_cpu.to_vector<T>(c)) << op << " of " << to_string(result.dtype());
      return got;
    };
    EXPECT_EQ(on_sim(add(xs, ys, s), add(xc, yc, c), "add")[0], kMin);
    EXPECT_EQ(on_sim(sub(xs, ys, s), sub(xc, yc, c), "sub")[1], kMax);
    EXPECT_EQ(on_sim(mul(xs, ys, s), mul(xc, yc, c), "mul")[2], kMin);
    const std::vector<T> quotients = on_sim(div(xs, ys, s), div(xc, yc, c), "div");
    EXPECT_EQ(quotients[2], kMin) << "MIN / -1";
    EXPECT_EQ(quotients[5], T(0)) << "7 / 0";
    EXPECT_EQ(quotients[6], T(-3)) << "-7 / 2 truncates";
    EXPECT_EQ(on_sim(neg(xs, s), neg(xc, c), "neg")[1], kMin);
    EXPECT_EQ(on_sim(abs(xs, s), abs(xc, c), "abs")[1], kMin);
  };
  check(int32_t{});
  check(int64_t{});
}

// Fallbacks borrow cpu:0 streams from a pool and give them back: many threads falling back at
// once each get a stream of their own, and every result is right.
TEST(Plugins, FallbacksFromManyThreadsAtOnceEachGetTheirOwnResult) {
  constexpr int kThreads = 8, kRounds = 40;
  std::mutex mutex;
  std::vector<std::string> wrong;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &mutex, &wrong] {
      CpuFallback allow;
      Stream s = device("sim:" + std::to_string(t % 3)).create_stream();
      for (int round = 0; round < kRounds; ++round) {
        // Small integers: their squares are exact in f32 whatever pow's rounding.
        const float base = static_cast<float>(t * kRounds + round);
        const Tensor x = from_vector(floats({base, base + 1, base + 2}), {3}, s);
        // pow is not sim's: cpu:0 runs it, on a borrowed stream.
        const std::vector<float> got =
            pow(x, from_vector(floats({2, 2, 2}), {3}, s), s).to_vector<float>(s);
        for (size_t i = 0; i < 3; ++i) {
          const float expected = (base + static_cast<float>(i)) * (base + static_cast<float>(i));
          if (got[i] != expected) {
            const std::lock_guard lock(mutex);
            wrong.push_back("thread " + std::to_string(t) + " round " + std::to_string(round) +
                            ": " + std::to_string(got[i]) + " for " + std::to_string(expected));
          }
        }
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " wrong, the first " << wrong.front();
}

TEST(Plugins, SimCompilesAndLaunchesItsNativeKernels) {
  Device sim = device("sim:0");
  Stream stream = sim.create_stream();
  const Kernel saxpy =
      sim.compile({"saxpy", "kernel iota_u32\nkernel saxpy\n", KernelLanguage::native});
  const Kernel scale = sim.compile({"scale_f32", "kernel scale_f32", KernelLanguage::native},
                                   {.defines = {"SCALE=2.5"}});
  const uint32_t n = 100;
  std::vector<float> x(n), y(n, 1.0f);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i);
  Buffer bx = sim.allocate(n * 4), by = sim.allocate(n * 4);
  stream.copy_from_host(bx, x.data(), n * 4);
  stream.copy_from_host(by, y.data(), n * 4);
  stream.launch(saxpy, LaunchConfig::linear(n), {3.0f, bx, by, n});
  stream.launch(scale, LaunchConfig::linear(n), {by});
  stream.copy_to_host(y.data(), by, n * 4);
  stream.synchronize();
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(y[i], 2.5f * (3.0f * float(i) + 1.0f)) << i;

  expect_error(
      [&] {
        sim.compile({"nope", "kernel nope", KernelLanguage::native});
      },
      ErrorCode::CompileFailed, {"sim:0", "nope", "line 1", "sim has saxpy"});
  expect_error(
      [&] {
        sim.compile({"saxpy", "KERNEL void saxpy() {}"});
      },
      ErrorCode::Unsupported, {"sim:0", "portable"});
  expect_error([&] { stream.launch(saxpy, LaunchConfig::linear(n), {bx}); },
               ErrorCode::InvalidArgument, {"saxpy", "takes 4 arguments"});
  stream.synchronize();
  const Kernel old_style = sim.compile({"iota_u32", "kernel iota_u32", KernelLanguage::native});
  expect_error(
      [&] {
        device("simold:0").compile({"iota_u32", "kernel iota_u32", KernelLanguage::native});
      },
      ErrorCode::Unsupported, {"simold:0"});
}

// Views reaching outside their buffers, passed to sim's table as any caller of the ABI could
// (hal refuses such tensors before they reach a plugin): each is refused with INVALID_ARGUMENT
// naming the op and the operand, and nothing runs. Views inside, negative strides too, run.
TEST(Plugins, SimRefusesViewsOutsideTheirBuffersNamingTheOpAndOperand) {
  const hal_plugin_api* api = sim_api();
  ASSERT_NE(api, nullptr) << "sim's table, from the library hal loaded";
  hal_plugin_device sim = nullptr;
  hal_plugin_stream stream = nullptr;
  hal_plugin_buffer buffer = nullptr;  // 16 f32: 0, 1, ..., 15
  ASSERT_EQ(api->device_get(0, &sim), HAL_STATUS_OK);
  ASSERT_EQ(api->stream_create(sim, &stream), HAL_STATUS_OK) << api->last_error();
  ASSERT_EQ(api->buffer_allocate(sim, 64, &buffer), HAL_STATUS_OK) << api->last_error();
  std::vector<float> values(16);
  std::iota(values.begin(), values.end(), 0.0f);
  ASSERT_EQ(api->copy_to_device(stream, buffer, 0, values.data(), 64), HAL_STATUS_OK);
  const auto view = [&](uint64_t offset, std::vector<int64_t> shape, std::vector<int64_t> strides) {
    return sim_view(buffer, offset, std::move(shape), std::move(strides));
  };
  const auto refused = [&](hal_status status, std::initializer_list<const char*> parts) {
    EXPECT_EQ(status, HAL_STATUS_INVALID_ARGUMENT);
    const std::string message = api->last_error();
    for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  };

  // Inside: elements 3, 2, 1, 0 read backwards, negated into 8 to 11.
  const hal_plugin_tensor x = view(0, {4}, {1}), out = view(8, {4}, {1});
  const hal_plugin_tensor backwards = view(3, {4}, {-1});
  EXPECT_EQ(api->op_unary(stream, HAL_PLUGIN_UNARY_NEG, &out, &backwards), HAL_STATUS_OK)
      << api->last_error();
  std::vector<float> negated(4);
  ASSERT_EQ(api->copy_to_host(stream, negated.data(), buffer, 32, 16), HAL_STATUS_OK);
  ASSERT_EQ(api->stream_synchronize(stream), HAL_STATUS_OK);
  EXPECT_EQ(negated, floats({-3, -2, -1, 0}));

  const hal_plugin_tensor past_end = view(13, {4}, {1});                   // elements 13 to 16
  const hal_plugin_tensor before_start = view(2, {4}, {-1});               // elements 2 to -1
  const hal_plugin_tensor strided = view(0, {4, 4}, {5, 1});               // elements 0 to 18
  const hal_plugin_tensor whole = view(0, {4, 4}, {4, 1});                 // elements 0 to 15
  const hal_plugin_tensor overflowing = view(0, {3}, {int64_t{1} << 62});  // 2^63: no int64
  refused(api->op_binary(stream, HAL_PLUGIN_BINARY_ADD, &out, &x, &past_end),
          {"add", "operand b", "element offset 13", "buffer of 16 elements"});
  refused(api->op_binary(stream, HAL_PLUGIN_BINARY_SUB, &past_end, &x, &x), {"sub", "operand out"});
  refused(api->op_unary(stream, HAL_PLUGIN_UNARY_ABS, &out, &before_start), {"abs", "operand x"});
  refused(api->op_unary(stream, HAL_PLUGIN_UNARY_RELU, &whole, &strided), {"relu", "operand x"});
  hal_plugin_tensor deep = out;
  deep.rank = HAL_PLUGIN_MAX_RANK + 1;
  refused(api->op_unary(stream, HAL_PLUGIN_UNARY_NEG, &deep, &x), {"neg", "operand out", "9"});
  const hal_plugin_tensor one = view(0, {}, {});
  refused(api->op_reduce(stream, HAL_PLUGIN_REDUCE_SUM, &one, &overflowing, 1u),
          {"sum", "operand x"});
  // argmax of two rows writes two i64 positions: elements 7 and 8 of the buffer's 8.
  const hal_plugin_tensor rows = view(0, {2, 8}, {8, 1});
  hal_plugin_tensor positions = view(7, {2}, {1});
  positions.dtype = HAL_PLUGIN_DTYPE_I64;
  refused(api->op_reduce(stream, HAL_PLUGIN_REDUCE_ARGMAX, &positions, &rows, 2u),
          {"argmax", "operand out", "buffer of 8 elements"});

  // 2 x 2 matrices: A at elements 0 to 3, B at 4 to 7, C at 8 to 11.
  hal_plugin_gemm gemm{};
  gemm.struct_size = sizeof gemm;
  gemm.dtype = HAL_PLUGIN_DTYPE_F32;
  gemm.m = gemm.n = gemm.k = 2;
  gemm.batch = 1;
  gemm.a = gemm.b = gemm.c = buffer;
  gemm.a_offset = 0;
  gemm.b_offset = 4;
  gemm.c_offset = 8;
  gemm.lda = gemm.ldb = gemm.ldc = 2;
  hal_plugin_gemm bad = gemm;
  bad.c_offset = 14;  // C's last element: 17
  refused(api->op_matmul(stream, &bad), {"matmul", "operand c"});
  bad = gemm;
  bad.lda = 15;  // A's second row starts at 15
  refused(api->op_matmul(stream, &bad), {"matmul", "operand a"});
  bad = gemm;
  bad.batch = 2;
  bad.b_batch_stride = 12;  // B's second matrix at 16
  refused(api->op_matmul(stream, &bad), {"matmul", "operand b"});
  bad = gemm;
  bad.m = -1;
  refused(api->op_matmul(stream, &bad), {"matmul", "negative size"});

  // Nothing refused ran: the buffer holds what it held.
  std::vector<float> after(16);
  ASSERT_EQ(api->copy_to_host(stream, after.data(), buffer, 0, 64), HAL_STATUS_OK);
  ASSERT_EQ(api->stream_synchronize(stream), HAL_STATUS_OK);
  std::copy(negated.begin(), negated.end(), values.begin() + 8);
  EXPECT_EQ(after, values);
  EXPECT_EQ(api->stream_destroy(stream), HAL_STATUS_OK);
  EXPECT_EQ(api->buffer_free(buffer), HAL_STATUS_OK);
}

// The other side of the bounds checks: views at the very edges of their buffers, as hal sends
// them (src/ops/builtin_ops.cpp: broadcast operands with stride 0, a keepdim reduction's out
// without its 1s; src/ops/matmul.cpp operand_of: a broadcast batch with stride 0, a transposed
// operand; plugin_stream.cpp passes both on as they are) and as the ABI allows them (negative
// strides, which hal's tensors never have). A check too strict would refuse these: each is
// accepted and computed right. Every buffer is exactly as large as what its views reach, so the
// last element a view reaches is its buffer's last.
TEST(Plugins, SimAcceptsViewsThatReachTheEdgesOfTheirBuffersAndComputesThem) {
  const hal_plugin_api* api = sim_api();
  ASSERT_NE(api, nullptr) << "sim's table, from the library hal loaded";
  hal_plugin_device sim = nullptr;
  hal_plugin_stream stream = nullptr;
  ASSERT_EQ(api->device_get(0, &sim), HAL_STATUS_OK);
  ASSERT_EQ(api->stream_create(sim, &stream), HAL_STATUS_OK) << api->last_error();
  std::vector<hal_plugin_buffer> buffers;  // freed at the end
  // A buffer of exactly `values`' bytes, holding them.
  const auto buffer_of = [&]<class T>(const std::vector<T>& values) {
    hal_plugin_buffer buffer = nullptr;
    const uint64_t bytes = values.size() * sizeof(T);
    EXPECT_EQ(api->buffer_allocate(sim, bytes, &buffer), HAL_STATUS_OK) << api->last_error();
    EXPECT_EQ(api->copy_to_device(stream, buffer, 0, values.data(), bytes), HAL_STATUS_OK);
    EXPECT_EQ(api->stream_synchronize(stream), HAL_STATUS_OK);  // the copy reads `values`
    buffers.push_back(buffer);
    return buffer;
  };
  // The `count` elements of T that `buffer` holds once the work enqueued before it is done.
  const auto read = [&]<class T>(hal_plugin_buffer buffer, size_t count, T) {
    std::vector<T> got(count);
    EXPECT_EQ(api->copy_to_host(stream, got.data(), buffer, 0, count * sizeof(T)), HAL_STATUS_OK);
    EXPECT_EQ(api->stream_synchronize(stream), HAL_STATUS_OK);
    return got;
  };
  const auto accepted = [&](hal_status status, const char* what) {
    EXPECT_EQ(status, HAL_STATUS_OK) << what << ": " << api->last_error();
  };

  // x: [3, 4] holding 0 to 11, row-major; row [4] and column [3] are broadcast against it.
  const hal_plugin_buffer x = buffer_of(floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  const hal_plugin_buffer row = buffer_of(floats({10, 20, 30, 40}));
  const hal_plugin_buffer column = buffer_of(floats({100, 200, 300}));
  const hal_plugin_buffer half = buffer_of(floats({0.5f}));  // one element, broadcast to all
  const hal_plugin_buffer out = buffer_of(std::vector<float>(12));

  // Binary ops: a and b in out's shape, stride 0 where broadcast (ops::broadcast_strides).
  // x unsqueezed to [1, 3, 4] keeps stride 12 for its new dimension of size 1 (as
  // Tensor::unsqueeze gives it; out's contiguous strides have it too): one step along it is past
  // the buffer, but no element takes that step. row is broadcast over the rows: strides 0, 0, 1.
  const hal_plugin_tensor out3 = sim_view(out, 0, {1, 3, 4}, {12, 4, 1});
  const hal_plugin_tensor x3 = sim_view(x, 0, {1, 3, 4}, {12, 4, 1});
  const hal_plugin_tensor rows3 = sim_view(row, 0, {1, 3, 4}, {0, 0, 1});
  accepted(api->op_binary(stream, HAL_PLUGIN_BINARY_ADD, &out3, &x3, &rows3), "x + row");
  EXPECT_EQ(read(out, 12, float{}), floats({10, 21, 32, 43, 14, 25, 36, 47, 18, 29, 40, 51}));
  // Both operands broadcast: column [3, 1] (strides 1, 0) plus row [4] (strides 0, 1), an outer
  // sum reading each of the two small buffers whole, many times over.
  const hal_plugin_tensor out2 = sim_view(out, 0, {3, 4}, {4, 1});
  const hal_plugin_tensor columns = sim_view(column, 0, {3, 4}, {1, 0});
  const hal_plugin_tensor rows = sim_view(row, 0, {3, 4}, {0, 1});
  accepted(api->op_binary(stream, HAL_PLUGIN_BINARY_ADD, &out2, &columns, &rows), "column + row");
  EXPECT_EQ(read(out, 12, float{}),
            floats({110, 120, 130, 140, 210, 220, 230, 240, 310, 320, 330, 340}));
  // A buffer of one element broadcast to every element (strides 0, 0): it reaches element 0 only.
  const hal_plugin_tensor x2 = sim_view(x, 0, {3, 4}, {4, 1});
  const hal_plugin_tensor halves = sim_view(half, 0, {3, 4}, {0, 0});
  accepted(api->op_binary(stream, HAL_PLUGIN_BINARY_SUB, &out2, &x2, &halves), "x - 0.5");
  EXPECT_EQ(read(out, 12, float{}),
            floats({-0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 8.5f, 9.5f, 10.5f}));
  // x's last row as x[2:3] gives it (offset 8, shape [1, 4], strides 4, 1) ends exactly at x's
  // last element; out's [1, 4] at offset 8 ends at out's. out's first 8 elements keep x - 0.5.
  const hal_plugin_tensor last_out = sim_view(out, 8, {1, 4}, {4, 1});
  const hal_plugin_tensor last_row = sim_view(x, 8, {1, 4}, {4, 1});
  const hal_plugin_tensor half_row = sim_view(half, 0, {1, 4}, {0, 0});
  accepted(api->op_binary(stream, HAL_PLUGIN_BINARY_MUL, &last_out, &last_row, &half_row),
           "x[2:3] * 0.5");
  EXPECT_EQ(read(out, 12, float{}),
            floats({-0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 4, 4.5f, 5, 5.5f}));

  // Unary: x[::2, 1::2] (offset 1, strides 8, 2) reads elements 1, 3, 9 and 11, x's last.
  const hal_plugin_buffer corners = buffer_of(std::vector<float>(4));
  const hal_plugin_tensor corners_out = sim_view(corners, 0, {2, 2}, {2, 1});
  const hal_plugin_tensor stepped = sim_view(x, 1, {2, 2}, {8, 2});
  accepted(api->op_unary(stream, HAL_PLUGIN_UNARY_NEG, &corners_out, &stepped), "-x[::2, 1::2]");
  EXPECT_EQ(read(corners, 4, float{}), floats({-1, -3, -9, -11}));
  // Negative strides (the ABI's, not hal's): x reversed in both dimensions starts at its last
  // element, 11, and walks back to its first, 11 - 2 * 4 - 3 * 1 = 0: both ends exactly.
  const hal_plugin_tensor reversed = sim_view(x, 11, {3, 4}, {-4, -1});
  accepted(api->op_unary(stream, HAL_PLUGIN_UNARY_NEG, &out2, &reversed), "-x reversed");
  EXPECT_EQ(read(out, 12, float{}), floats({-11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0}));

  // Reductions: out holds x's kept dimensions in order, and each out below fills its buffer.
  // A keepdim reduction reaches sim as the plain one: builtin_reduce reshapes out to the kept
  // dimensions, [3] here. A caller that keeps the 1s ([3, 1]) names the same 3 elements, and
  // sim checks out against x's kept dimensions whatever out's shape says.
  const hal_plugin_buffer per_row = buffer_of(std::vector<float>(3));
  const hal_plugin_tensor row_sums = sim_view(per_row, 0, {3}, {1});
  accepted(api->op_reduce(stream, HAL_PLUGIN_REDUCE_SUM, &row_sums, &x2, 2u), "sum over axis 1");
  EXPECT_EQ(read(per_row, 3, float{}), floats({6, 22, 38}));  // 0+1+2+3, 4+5+6+7, 8+9+10+11
  const hal_plugin_tensor row_maxima = sim_view(per_row, 0, {3, 1}, {1, 1});
  accepted(api->op_reduce(stream, HAL_PLUGIN_REDUCE_MAX, &row_maxima, &x2, 2u),
           "max over axis 1, keeping its 1");
  EXPECT_EQ(read(per_row, 3, float{}), floats({3, 7, 11}));
  const hal_plugin_buffer per_column = buffer_of(std::vector<float>(4));
  const hal_plugin_tensor column_means = sim_view(per_column, 0, {4}, {1});
  accepted(api->op_reduce(stream, HAL_PLUGIN_REDUCE_MEAN, &column_means, &x2, 1u),
           "mean over axis 0");
  EXPECT_EQ(read(per_column, 4, float{}), floats({4, 5, 6, 7}));  // (j + 4 + j + 8 + j) / 3
  // Over every dimension (sum(x, {}, true) on hal: no dimension is kept): a 0-d out, in a buffer
  // of one element. x is read reversed, from its last element back to its first.
  const hal_plugin_buffer single = buffer_of(std::vector<float>(1));
  const hal_plugin_tensor total = sim_view(single, 0, {}, {});
  accepted(api->op_reduce(stream, HAL_PLUGIN_REDUCE_SUM, &total, &reversed, 3u),
           "sum of x reversed");
  EXPECT_EQ(read(single, 1, float{}), floats({66}));

  // argmax writes i64 positions, 8 bytes each, into out's buffer whatever x's dtype (f32 here):
  //   y = 3 1 4 1
  //       5 9 2 6
  //       5 3 5 8   (ties go to the first)
  const hal_plugin_buffer y = buffer_of(floats({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}));
  const hal_plugin_tensor y2 = sim_view(y, 0, {3, 4}, {4, 1});
  const hal_plugin_buffer positions = buffer_of(std::vector<int64_t>{-7, -7, -7, -7});  // 32 bytes
  // Per row, at offset 1: elements 1 to 3 of the 4, ending at the last exactly (where the refused
  // case above ran one element past); element 0 keeps its -7.
  const hal_plugin_tensor per_row_at_1 = sim_view(positions, 1, {3}, {1}, HAL_PLUGIN_DTYPE_I64);
  accepted(api->op_reduce(stream, HAL_PLUGIN_REDUCE_ARGMAX, &per_row_at_1, &y2, 2u),
           "argmax over axis 1");
  EXPECT_EQ(read(positions, 4, int64_t{}), (std::vector<int64_t>{-7, 2, 1, 3}));
  const hal_plugin_tensor per_column_positions =
      sim_view(positions, 0, {4}, {1}, HAL_PLUGIN_DTYPE_I64);
  accepted(api->op_reduce(stream, HAL_PLUGIN_REDUCE_ARGMAX, &per_column_positions, &y2, 1u),
           "argmax over axis 0");
  EXPECT_EQ(read(positions, 4, int64_t{}), (std::vector<int64_t>{1, 1, 2, 2}));
  // Over both: one position, row-major over the reduced dimensions, in a buffer of 8 bytes.
  const hal_plugin_buffer position = buffer_of(std::vector<int64_t>{-7});
  const hal_plugin_tensor overall = sim_view(position, 0, {}, {}, HAL_PLUGIN_DTYPE_I64);
  accepted(api->op_reduce(stream, HAL_PLUGIN_REDUCE_ARGMAX, &overall, &y2, 3u), "argmax of all");
  EXPECT_EQ(read(position, 1, int64_t{}), (std::vector<int64_t>{5}));  // the 9

  // Batched matmul as matmul_of and operand_of describe it: batch 2 of [2 x 3] * [3 x 2], C's
  // matrices m * n apart (c_batch_stride 4, ldc 2).
  //   A0 = 1 2 3   A1 = -1  0 1   B = 1 0
  //        4 5 6         2 -2 0       0 1
  //                                   1 1
  hal_plugin_gemm gemm{};
  gemm.struct_size = sizeof gemm;
  gemm.dtype = HAL_PLUGIN_DTYPE_F32;
  gemm.m = 2;
  gemm.k = 3;
  gemm.n = 2;
  gemm.batch = 2;
  // A [2, 2, 3] contiguous: lda 3, batch stride 6, its 12 elements the buffer's.
  gemm.a = buffer_of(floats({1, 2, 3, 4, 5, 6, -1, 0, 1, 2, -2, 0}));
  gemm.lda = 3;
  gemm.a_batch_stride = 6;
  // B [1, 3, 2], the transpose of a contiguous [1, 2, 3] (strides 6, 1, 3), expanded to the
  // batch: strides 0, 1, 3, which operand_of passes as transposed with ldb 3 and batch stride 0.
  // Its memory holds B's 2 x 3 transpose, 6 elements, which both batch entries read.
  gemm.b = buffer_of(floats({1, 0, 1, 0, 1, 1}));
  gemm.b_transposed = 1;
  gemm.ldb = 3;
  gemm.b_batch_stride = 0;
  gemm.c = buffer_of(std::vector<float>(8));
  gemm.ldc = 2;
  gemm.c_batch_stride = 4;
  accepted(api->op_matmul(stream, &gemm), "A * B broadcast and transposed");
  // A0 * B = [1+3, 2+3; 4+6, 5+6], A1 * B = [-1+1, 1; 2, -2]
  EXPECT_EQ(read(gemm.c, 8, float{}), floats({4, 5, 10, 11, 0, 1, 2, -2}));
  // The other way round: A0 broadcast over the batch (batch stride 0) and transposed (A's
  // [2, 3] the transpose of a contiguous [3, 2]: strides 1, 2, so lda 2 over A's 3 x 2 memory),
  // B batched and plain, C at offset 2 of a buffer of 10, ending at its last element.
  //   B0 = B   B1 = 2  0
  //                 0  0
  //                 0 -1
  hal_plugin_gemm other = gemm;
  other.a = buffer_of(floats({1, 4, 2, 5, 3, 6}));
  other.a_transposed = 1;
  other.lda = 2;
  other.a_batch_stride = 0;
  other.b = buffer_of(floats({1, 0, 0, 1, 1, 1, 2, 0, 0, 0, 0, -1}));
  other.b_transposed = 0;
  other.ldb = 2;
  other.b_batch_stride = 6;
  other.c = buffer_of(std::vector<float>(10, -7.0f));
  other.c_offset = 2;
  accepted(api->op_matmul(stream, &other), "A broadcast and transposed * B");
  // A0 * B0 as before; A0 * B1 = [2, -3; 8, -6]. C's first two elements keep their -7.
  EXPECT_EQ(read(other.c, 10, float{}), floats({-7, -7, 4, 5, 10, 11, 2, -3, 8, -6}));

  EXPECT_EQ(api->stream_destroy(stream), HAL_STATUS_OK);
  for (hal_plugin_buffer buffer : buffers) EXPECT_EQ(api->buffer_free(buffer), HAL_STATUS_OK);
}

// hal cannot know how far a kernel reaches into its buffers: sim checks its own kernels' reach
// (and that each buffer starts on one of their 4-byte elements),
// so a launch past a buffer is refused where it wrote past the arena. The buffer is sim's own
// (direct): a cached one is a block of a larger segment, which is all a plugin sees.
TEST(Plugins, SimRefusesALaunchThatWouldRunPastItsBuffers) {
  Device sim = device("sim:0");
  Stream stream = sim.create_stream();
  const Kernel iota = sim.compile({"iota_u32", "kernel iota_u32", KernelLanguage::native});
  const Kernel saxpy = sim.compile({"saxpy", "kernel saxpy", KernelLanguage::native});
  Buffer out = sim.allocate(64, MemoryKind::device, AllocationMode::direct);  // 16 elements
  stream.launch(iota, LaunchConfig::linear(16), {out, 0u});
  expect_error(
      [&] {
        stream.launch(iota, LaunchConfig::linear(17), {out, 100u});
      },
      ErrorCode::InvalidArgument, {"sim:0", "iota_u32", "argument 0", "64 bytes"});
  expect_error(
      [&] {
        stream.launch(iota, LaunchConfig::linear(16), {KernelArg(out, 4), 100u});
      },
      ErrorCode::InvalidArgument, {"sim:0", "iota_u32", "byte offset 4"});
  expect_error(
      [&] {
        stream.launch(iota, LaunchConfig::linear(1), {KernelArg(out, 2), 1u});
      },
      ErrorCode::InvalidArgument,
      {"sim:0", "iota_u32", "argument 0 is at byte offset 2, not a multiple of its elements' 4"});
  expect_error(
      [&] {
        stream.launch(saxpy, LaunchConfig::linear(32), {2.0f, out, out, 32u});
      },
      ErrorCode::InvalidArgument, {"sim:0", "saxpy", "argument 1"});
  std::vector<uint32_t> got(16), want(16);
  std::iota(want.begin(), want.end(), 0u);
  stream.copy_to_host(got.data(), out, 64);
  stream.synchronize();
  EXPECT_EQ(got, want) << "a refused launch wrote nothing";
}

TEST(Plugins, APluginOfAnOlderMinorVersionWorksWithoutItsMissingFunctions) {
  const auto all = plugins();
  const PluginInfo* old = find_plugin(all, "libsim_old_minor.so");
  ASSERT_NE(old, nullptr);
  ASSERT_TRUE(old->loaded) << old->reason;
  Device device_old = device("simold:0");
  EXPECT_FALSE(device_old.info().has_feature(feature::kBuiltinBinary))
      << "its table ends before the ops";
  Stream stream = device_old.create_stream();
  const Tensor x = from_vector(floats({1, 2}), {2}, stream);
  EXPECT_EQ(x.to_vector<float>(stream), floats({1, 2}));
  expect_error([&] { add(x, x, stream); }, ErrorCode::Unsupported, {"add", "simold:0"});
}

TEST(Plugins, EventsTimeWorkByThePerformanceModel) {
  // HAL_SIM_CONFIG: bandwidth 100 GB/s, 5 us per operation.
  Device sim = device("sim:2");
  Stream stream = sim.create_stream();
  Buffer buffer = sim.allocate(16 << 20);
  std::vector<unsigned char> host(16 << 20, 1);
  Event start = stream.record();
  stream.copy_from_host(buffer, host.data(), host.size());
  Event end = stream.record();
  end.synchronize();
  const double expected_ms = (5.0 + (16 << 20) / 100.0 / 1000.0) / 1000.0;
  EXPECT_NEAR(Event::elapsed_ms(start, end), expected_ms, expected_ms * 1e-6);
}

TEST(Plugins, MemoryFreedWhileWorkUsesItComesBackOnlyAfterTheWork) {
  // 64 MiB on sim:2: a 40 MiB buffer dropped while a blocked stream still uses it keeps its
  // memory, so a second 40 MiB does not fit until that work is done.
  Device sim = device("sim:2");
  sim.empty_cache();
  Stream blocked = sim.create_stream(), other = sim.create_stream();
  Gate gate;
  {
    Buffer first = sim.allocate(40 << 20);
    blocked.host_callback(gate.hold());
    blocked.fill(first, uint8_t{7}, first.size());
  }  // the handle is gone; the pending fill still holds the memory
  expect_error([&] { sim.allocate(40 << 20); }, ErrorCode::OutOfMemory, {"sim:2"});
  gate.open();
  blocked.synchronize();
  Buffer second = sim.allocate(40 << 20);  // the same memory, now free
  other.fill(second, uint8_t{1}, 16);
  other.synchronize();
}

TEST(Plugins, DestroyingAStreamWithPendingWorkFinishesItFirst) {
  Device sim = device("sim:1");
  Buffer buffer = sim.allocate(1024);
  std::vector<unsigned char> out(1024, 0);
  Gate gate;
  std::thread opener;
  {
    Stream stream = sim.create_stream();
    stream.host_callback(gate.hold());
    stream.fill(buffer, uint8_t{9}, 1024);
    stream.copy_to_host(out.data(), buffer, 1024);
    opener = std::thread([&gate] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.open();
    });
  }  // waits for the gate, the fill and the copy
  opener.join();
  EXPECT_EQ(out, std::vector<unsigned char>(1024, 9));
}

// plugin.h lets a callback call the API, but not for its own stream; and a synchronize holds the
// stream's lock while the plugin waits for that callback, so such a call waited for ever. hal
// refuses it, naming the rule; another stream of the device takes the call.
TEST(Plugins, AStreamsOwnCallbackCannotCallIntoIt) {
  Device sim = device("sim:0");
  Stream stream = sim.create_stream(), other = sim.create_stream();
  Buffer buffer = sim.allocate(1024);
  std::string refusal;
  stream.host_callback([&] {
    try {
      stream.fill(buffer, uint8_t{1}, 1024);
    } catch (const Error& error) {
      if (error.code() == ErrorCode::InvalidState) refusal = error.what();
    }
    other.fill(buffer, uint8_t{2}, 1024);
  });
  stream.synchronize();
  other.synchronize();
  for (const char* part : {"fill on a stream of sim:0", "from that stream's own host callback"})
    EXPECT_NE(refusal.find(part), std::string::npos) << refusal;
  std::vector<uint8_t> back(1024, 0);
  stream.copy_to_host(back.data(), buffer, 1024);
  stream.synchronize();
  EXPECT_EQ(back, std::vector<uint8_t>(1024, 2));
}

TEST(Plugins, ManyThreadsShareSimDevices) {
  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &correct] {
      Device sim = device("sim:" + std::to_string(t % 3));
      Stream stream = sim.create_stream();
      for (int round = 0; round < 20; ++round) {
        const float value = static_cast<float>(t * 100 + round);
        const Tensor x = full({64}, value, DType::f32, stream);
        const auto total = sum(add(x, x, stream), {}, false, stream).to_vector<float>(stream);
        if (total[0] == 128 * value) ++correct;
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(correct.load(), 8 * 20);
}

// Fault scenarios, each run by CTest in a process of its own with its HAL_SIM_CONFIG.

TEST(SimFaults, OutOfMemoryAtTheNthAllocationIsRetriedAndLaterWorkIsCorrect) {
  // HAL_SIM_CONFIG=devices=1,memory=64M,fail_alloc_at=2
  Device sim = device("sim:0");
  Stream s = sim.create_stream();
  const Tensor x = from_vector(floats({1, 2, 3, 4}), {4}, s);  // allocation 1
  const uint64_t reserved = sim.allocator().stats().reserved_bytes.current;
  // Allocation 2, a segment rounded up past the request, fails; hal asks for the request alone.
  Buffer big = sim.allocate((8 << 20) + 512);
  EXPECT_EQ(sim.allocator().stats().reserved_bytes.current, reserved + (8 << 20) + 512)
      << "the rounded segment was refused (injected), the exact one given";
  std::vector<unsigned char> in(big.size(), 3), out(big.size(), 0);
  s.copy_from_host(big, in.data(), in.size());
  s.copy_to_host(out.data(), big, out.size());
  s.synchronize();
  EXPECT_EQ(out, in);
  EXPECT_EQ(add(x, x, s).to_vector<float>(s), floats({2, 4, 6, 8}));
}

TEST(SimFaults, AFailedOpIsReportedAndTheNextOneRuns) {
  // HAL_SIM_CONFIG=devices=1,fail_op_at=1
  Device sim = device("sim:0");
  Stream s = sim.create_stream();
  const Tensor x = from_vector(floats({1, -2}), {2}, s);
  expect_error([&] { relu(x, s); }, ErrorCode::Internal, {"sim:0", "injected"});
  EXPECT_EQ(relu(x, s).to_vector<float>(s), floats({1, 0}));
}

TEST(SimFaults, AFailedLaunchIsReportedAndTheNextOneRuns) {
  // HAL_SIM_CONFIG=devices=1,fail_op_at=2
  Device sim = device("sim:0");
  Stream s = sim.create_stream();
  const Kernel iota = sim.compile({"iota_u32", "kernel iota_u32", KernelLanguage::native});
  Buffer out = sim.allocate(16);
  s.launch(iota, LaunchConfig::linear(4), {out, 10u});  // op 1
  expect_error(
      [&] {
        s.launch(iota, LaunchConfig::linear(4), {out, 20u});
      },
      ErrorCode::Internal, {"sim:0", "launch of kernel 'iota_u32'", "injected"});
  s.launch(iota, LaunchConfig::linear(4), {out, 30u});
  std::vector<uint32_t> got(4);
  s.copy_to_host(got.data(), out, 16);
  s.synchronize();
  EXPECT_EQ(got, (std::vector<uint32_t>{30, 31, 32, 33}));
}

TEST(SimFaults, ALostDeviceStaysLostAndOthersWork) {
  // HAL_SIM_CONFIG=devices=2,lose_device_at=12,fault_device=0
  Device lost = device("sim:0");
  ASSERT_EQ(work_until_a_failure(lost), ErrorCode::DeviceLost) << "the injected loss never came";
  for (int i = 0; i < 3; ++i)
    expect_error([&] { lost.create_stream(); }, ErrorCode::DeviceLost, {"sim:0", "lost"});
  Device other = device("sim:1");
  Stream s = other.create_stream();
  EXPECT_EQ(from_vector(floats({5}), {1}, s).to_vector<float>(s), floats({5}));
}

// A CPU buffer recorded on a sim stream is held until that stream's work is done; once sim:0 is
// lost its fence throws instead of answering, and the hold counts as done: allocations on cpu:0
// go on (they threw DeviceLost about sim:0 each time, then crashed on a half-partitioned list),
// and so does the process's exit.
TEST(SimFaults, AHoldOnALostDevicesStreamDoesNotFailAnotherDevicesAllocations) {
  // HAL_SIM_CONFIG=devices=2,lose_device_at=12,fault_device=0
  const Device cpu = device("cpu:0");
  const Device lost = device("sim:0");
  Stream on_cpu = cpu.create_stream();
  Stream on_sim = lost.create_stream();
  {
    const Buffer a = cpu.allocate(4096), b = cpu.allocate(8192);
    record_stream(a, on_cpu);
    on_cpu.synchronize();
    record_stream(b, on_sim);
  }  // both held: a until on_cpu's fence (done), b until on_sim's
  ASSERT_EQ(work_until_a_failure(lost), ErrorCode::DeviceLost) << "the injected loss never came";
  for (size_t bytes : {size_t{100}, size_t{2000}, size_t{1} << 20, size_t{3} << 20}) {
    Buffer buffer;
    EXPECT_NO_THROW(buffer = cpu.allocate(bytes)) << bytes << " bytes";
    EXPECT_EQ(buffer.size(), bytes);
  }
  on_cpu.synchronize();
}

// HAL_SIM_CONFIG=devices=1,fail_event_at=2: the fence of the second command that holds host
// memory cannot be made. The command was enqueued: it is not reported as failed (its caller
// would free or retry what it runs on), and it runs, its memory held until a later fence.
TEST(SimFaults, ACommandWhoseFenceCannotBeMadeRunsAndIsNotReportedAsFailed) {
  Device sim = device("sim:0");
  Stream stream = sim.create_stream();
  const Buffer buffer = sim.allocate(4 * 1024);
  for (int round = 0; round < 4; ++round) {
    std::vector<uint32_t> host(1024, 0x1000u + static_cast<uint32_t>(round));
    EXPECT_NO_THROW(stream.copy_from_host(buffer, host.data(), 4096)) << "round " << round;
    std::vector<uint32_t> back(1024, 0);
    EXPECT_NO_THROW(stream.copy_to_host(back.data(), buffer, 4096)) << "round " << round;
    stream.synchronize();
    EXPECT_EQ(back, host) << "round " << round;
  }
}

// HAL_SIM_CONFIG=devices=1,memory=64T: the device advertises more memory than the host can back.
// sim let std::bad_alloc out through the C table (plugin.h forbids it), kept the bytes charged,
// and hal's allocator, which retries on OutOfMemory alone, saw a foreign exception.
TEST(SimHost, MemoryTheHostCannotBackIsOutOfMemoryAndNotCharged) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' allocators abort on a 32 TiB request instead of failing it";
#endif
  Device sim = device("sim:0");
  const uint64_t free_before = sim.memory_free().bytes;
  expect_error([&] { sim.allocate(uint64_t{1} << 45); }, ErrorCode::OutOfMemory,
               {"the host has no room for"});
  EXPECT_EQ(sim.memory_free().bytes, free_before);
  Buffer small = sim.allocate(4096);  // the device still works
  Stream stream = sim.create_stream();
  std::vector<uint32_t> host(1024, 5), back(1024, 0);
  stream.copy_from_host(small, host.data(), 4096);
  stream.copy_to_host(back.data(), small, 4096);
  stream.synchronize();
  EXPECT_EQ(back, host);
}

// HAL_SIM_CONFIG=devices=1,fail_query_at=1: the first query of a fence fails with INTERNAL, an
// error that says nothing of the work (only DEVICE_LOST says it runs no more). hal counted any
// error as done and let go of the buffers of fills still waiting behind a gate: their blocks
// went back to the allocator while the plugin was yet to write them.
TEST(SimFaults, AFenceWhoseQueryFailsStillHoldsItsWorksMemory) {
  Device sim = device("sim:0");
  Stream stream = sim.create_stream();
  Gate gate;
  stream.host_callback(gate.hold());
  const uint64_t before = sim.allocator().stats().active_bytes.current;
  for (int i = 0; i < 4; ++i) {
    Buffer buffer = sim.allocate(4096);
    stream.fill(buffer, uint8_t{7}, 4096);
  }  // the caller lets go of each at once: the fills hold them
  const uint64_t held = sim.allocator().stats().active_bytes.current - before;
  EXPECT_GE(held, 4u * 4096) << "four fills wait behind the gate, each holding its buffer";
  EXPECT_FALSE(stream.query());  // polls the fences again, pending behind the gate
  EXPECT_EQ(sim.allocator().stats().active_bytes.current - before, held);
  gate.open();
  stream.synchronize();
  EXPECT_EQ(sim.allocator().stats().active_bytes.current, before);
}

// HAL_SIM_CONFIG=devices=1,lose_device_at=20. A copy into host memory waits behind a gate
// when the device is lost; once hal reports the loss, the caller frees that memory (as
// unwinding would), so nothing of the stream may begin after the report. sim (1.3) tells the
// callback queued behind the copy of the loss, and hal does not run it; simold (a table of 1.0,
// whose callbacks cannot be told) runs it before the call that found the loss returns.
void expect_a_loss_to_stop_the_streams_before_a_call_says_so(const std::string& id) {
  SCOPED_TRACE(id);
  std::atomic<bool> reported{false}, ran_after_report{false};  // used by the stream's callbacks
  Gate gate;
  std::vector<unsigned char> host(1024, 0);
  Device sim = device(id);
  Stream stream = sim.create_stream();
  Buffer buffer = sim.allocate(1024);
  stream.host_callback(gate.hold());
  stream.copy_to_host(host.data(), buffer, host.size());
  stream.host_callback([&] {
    if (reported) ran_after_report = true;
  });
  std::thread opener([&gate] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.open();
  });
  bool lost = false;
  for (int i = 0; i < 50 && !lost; ++i) {
    try {
      stream.fill(buffer, uint8_t{1}, 1024);
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::DeviceLost) << error.what();
      lost = true;
      reported = true;
    }
  }
  opener.join();
  ASSERT_TRUE(lost) << "the injected loss never came";
  EXPECT_FALSE(ran_after_report) << "the stream ran work after hal reported the device lost";
  expect_error([&] { stream.synchronize(); }, ErrorCode::DeviceLost, {id, "lost"});
}

TEST(SimFaults, LosingADeviceStopsItsStreamsBeforeAnyCallSaysSo) {
  expect_a_loss_to_stop_the_streams_before_a_call_says_so("sim:0");
  expect_a_loss_to_stop_the_streams_before_a_call_says_so("simold:0");
}

TEST(SimFaults, ADeviceLostWhileListedFailsAlone) {
  // HAL_SIM_CONFIG=devices=3,lose_device_at=1,fault_device=1: sim:1 is lost on the first call
  // hal makes, reading its properties.
  for (const BackendStatus& backend : Registry::instance().backends())
    if (backend.name == "sim") {
      EXPECT_TRUE(backend.available) << backend.reason;
      EXPECT_EQ(backend.device_count, 3u);
    }
  Device lost = device("sim:1");
  EXPECT_NE(lost.info().name.find("lost"), std::string::npos) << lost.info().name;
  EXPECT_EQ(lost.memory_free().bytes, 0u);
  expect_error([&] { lost.create_stream(); }, ErrorCode::DeviceLost, {"sim:1", "lost"});
  expect_error([&] { lost.allocate(64); }, ErrorCode::DeviceLost, {"sim:1", "lost"});
  for (const char* id : {"sim:0", "sim:2"}) {
    Stream s = device(id).create_stream();
    EXPECT_EQ(from_vector(floats({7}), {1}, s).to_vector<float>(s), floats({7})) << id;
  }
}

// HAL_SIM_CONFIG=devices=2,zero_uuid=1: a plugin that leaves its devices' UUIDs zero. Each gets
// a name-based one of its own, or both would share one calibration file and tuning entry.
TEST(SimConfig, AZeroUuidIsReplacedByOneForEachDevice) {
  const std::string first = device("sim:0").info().uuid, second = device("sim:1").info().uuid;
  EXPECT_NE(first, "00000000-0000-0000-0000-000000000000");
  EXPECT_NE(second, "00000000-0000-0000-0000-000000000000");
  EXPECT_NE(first, second);
  EXPECT_EQ(first.size(), 36u) << first;
  // The same device gets the same UUID in every run: it is derived from what names it.
  EXPECT_EQ(first, name_based_uuid("plugin|sim:0|hal|hal simulated accelerator|1.0"));
}

}  // namespace
}  // namespace hal::test
