// kernel.*: kernels in hal's portable dialect (on devices that compile them) and host kernels
// (on devices that run them): compiles, launches of 1-d and 2-d grids with shared memory,
// caching, and errors.
#include <cmath>

#include "case.hpp"

namespace hal::cts {
namespace {

const char* const kSaxpy = R"(
KERNEL void saxpy(float a, GLOBAL const float* x, GLOBAL float* y, uint n) {
  const size_t i = global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
})";

const char* const kGrid = R"(
KERNEL void grid(GLOBAL uint* out, uint width, uint height) {
  if (global_id(0) >= width || global_id(1) >= height) return;  // whole groups may run past
  out[global_id(1) * width + global_id(0)] = (uint)(global_id(0) + 1000 * global_id(1));
})";

const char* const kGroupSums = R"(
KERNEL void group_sums(GLOBAL const float* in, GLOBAL float* out) {
  SHARED float tile[64];
  const size_t item = local_id(0);
  tile[item] = in[global_id(0)];
  barrier();
  for (size_t step = 32; step > 0; step /= 2) {
    if (item < step) tile[item] += tile[item + step];
    barrier();
  }
  if (item == 0) out[group_id(0)] = tile[0];
})";

const char* const kScaled = R"(
KERNEL void scaled(GLOBAL float* out) { out[global_id(0)] = SCALE * (float)global_id(0); })";

Kernel host_saxpy() {
  return host_kernel("saxpy", [](Index3 i, const KernelArgs& args) {
    const float a = args.scalar<float>(0);
    const float* x = args.ptr<float>(1);
    float* y = args.ptr<float>(2);
    y[i[0]] = a * x[i[0]] + y[i[0]];
  });
}

void needs_portable_kernels(const Device& d) {
  if (!d.info().has_feature(feature::kPortableKernels))
    throw NotSupported(d.id() + " does not compile portable kernels");
}

Kernel compile(const Device& d, const char* name, const char* code, CompileOptions options = {}) {
  needs_portable_kernels(d);
  return d.compile({name, code}, options);
}

std::vector<float> read_floats(Stream& stream, const Buffer& buffer, size_t count) {
  std::vector<float> out(count);
  stream.copy_to_host(out.data(), buffer, count * sizeof(float));
  stream.synchronize();
  return out;
}

// y = 2x + 1 over `n` items with `saxpy`, checked element by element.
void check_saxpy(const Device& d, const Kernel& saxpy, uint32_t n) {
  Stream stream = d.create_stream();
  std::vector<float> x(n), y(n, 1.0f);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i);
  Buffer bx = d.allocate(n * 4), by = d.allocate(n * 4);
  stream.copy_from_host(bx, x.data(), n * 4);
  stream.copy_from_host(by, y.data(), n * 4);
  stream.launch(saxpy, LaunchConfig::linear(n), {2.0f, bx, by, n});
  const auto got = read_floats(stream, by, n);
  for (uint32_t i = 0; i < n; ++i)
    check(got[i] == 2.0f * x[i] + 1.0f, "y[" + std::to_string(i) + "]");
}

}  // namespace

void add_kernel_cases(Cases& cases) {
  cases.push_back({"kernel.portable.saxpy",
                   [](const Device& d) { check_saxpy(d, compile(d, "saxpy", kSaxpy), 1000); }});
  // saxpy as the device runs kernels: on the host where it runs host kernels (with a scalar
  // argument), else compiled.
  for (uint32_t n : {1u, 1000u, 1u << 20})
    cases.push_back({"kernel.saxpy." + std::to_string(n) + "_items", [n](const Device& d) {
                       check_saxpy(d,
                                   d.info().has_feature(feature::kHostKernels)
                                       ? host_saxpy()
                                       : compile(d, "saxpy", kSaxpy),
                                   n);
                     }});
  // 1000 items in groups of 64: the last group runs past the end, and the kernel's bound check
  // keeps it inside the buffer.
  cases.push_back({"kernel.portable.last_group_past_the_global_size", [](const Device& d) {
                     const Kernel saxpy = compile(d, "saxpy", kSaxpy);
                     if (d.info().limits.max_work_group_size < 64)
                       throw NotSupported("work-groups of 64 items do not fit");
                     const uint32_t n = 1000;
                     std::vector<float> x(n, 1.0f);
                     Stream stream = d.create_stream();
                     Buffer bx = d.allocate(n * 4), by = d.allocate(n * 4);
                     stream.copy_from_host(bx, x.data(), n * 4);
                     stream.fill(by, 0.5f, n);
                     LaunchConfig config = LaunchConfig::linear(n);
                     config.local = {64, 1, 1};
                     stream.launch(saxpy, config, {4.0f, bx, by, n});
                     const auto got = read_floats(stream, by, n);
                     for (uint32_t i = 0; i < n; ++i)
                       check(got[i] == 4.5f, "y[" + std::to_string(i) + "]");
                   }});
  cases.push_back({"kernel.portable.two_dimensional_grid", [](const Device& d) {
                     const Kernel grid = compile(d, "grid", kGrid);
                     Stream stream = d.create_stream();
                     const uint32_t width = 33, height = 7;
                     Buffer out = d.allocate(width * height * 4);
                     stream.launch(grid, LaunchConfig::grid(width, height), {out, width, height});
                     std::vector<uint32_t> got(width * height);
                     stream.copy_to_host(got.data(), out, got.size() * 4);
                     stream.synchronize();
                     for (uint32_t yy = 0; yy < height; ++yy)
                       for (uint32_t xx = 0; xx < width; ++xx)
                         check(got[yy * width + xx] == xx + 1000 * yy,
                               "(" + std::to_string(xx) + ", " + std::to_string(yy) + ")");
                   }});
  cases.push_back({"kernel.portable.shared_memory_and_barriers", [](const Device& d) {
                     const Kernel sums = compile(d, "group_sums", kGroupSums);
                     if (d.info().limits.max_work_group_size < 64)
                       throw NotSupported("work-groups of 64 items do not fit");
                     Stream stream = d.create_stream();
                     std::vector<float> in(64 * 8);
                     for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 64);
                     Buffer bin = d.allocate(in.size() * 4), bout = d.allocate(8 * 4);
                     stream.copy_from_host(bin, in.data(), in.size() * 4);
                     stream.launch(sums, LaunchConfig{{64 * 8, 1, 1}, {64, 1, 1}}, {bin, bout});
                     for (float s : read_floats(stream, bout, 8))
                       check(s == 2016.0f, "a group summed to " + std::to_string(s));
                   }});
  cases.push_back({"kernel.portable.defines_reach_the_source", [](const Device& d) {
                     const Kernel scaled =
                         compile(d, "scaled", kScaled, {.defines = {"SCALE=3.0f"}});
                     Stream stream = d.create_stream();
                     Buffer out = d.allocate(16 * 4);
                     stream.launch(scaled, LaunchConfig::linear(16), {out});
                     const auto got = read_floats(stream, out, 16);
                     for (size_t i = 0; i < 16; ++i) check(got[i] == 3.0f * float(i), "element");
                   }});
  cases.push_back({"kernel.portable.second_compile_is_cached", [](const Device& d) {
                     const Kernel first = compile(d, "saxpy", kSaxpy);
                     const Kernel again = compile(d, "saxpy", kSaxpy);
                     check(again.origin() == KernelOrigin::memory_cache,
                           "origin " + std::string(to_string(again.origin())));
                     check(again.impl() == first.impl(), "the cached kernel is another");
                     // Other options are another kernel, even when the source ignores them.
                     const Kernel other =
                         compile(d, "saxpy", kSaxpy, {.defines = {"CTS_UNUSED_DEFINE=1"}});
                     check(other.origin() != KernelOrigin::memory_cache,
                           "other options came from the memory cache");
                     check(other.impl() != first.impl(), "other options gave the same kernel");
                   }});
  cases.push_back({"kernel.portable.compile_error_gives_the_log", [](const Device& d) {
                     needs_portable_kernels(d);
                     check_error(
                         [&] {
                           d.compile({"broken",
                                      "KERNEL void broken(GLOBAL float* x) { x[0] = "
                                      "undeclared_name; }"});
                         },
                         ErrorCode::CompileFailed, {"broken", "undeclared_name"},
                         "compiling a kernel with an undeclared name");
                   }});
  cases.push_back({"kernel.portable.missing_entry_point_is_refused", [](const Device& d) {
                     needs_portable_kernels(d);
                     try {
                       d.compile({"no_such_kernel", kSaxpy});
                     } catch (const Error& error) {
                       check(error.code() == ErrorCode::NotFound ||
                                 error.code() == ErrorCode::CompileFailed,
                             "unexpected " + std::string(to_string(error.code())));
                       check(error.message().find("no_such_kernel") != std::string::npos,
                             "the message does not name the kernel: " + error.message());
                       return;
                     }
                     throw Failure("a kernel that the source lacks compiled");
                   }});
  cases.push_back({"kernel.launch.work_group_beyond_the_limit_is_refused", [](const Device& d) {
                     const Kernel saxpy = compile(d, "saxpy", kSaxpy);
                     Stream stream = d.create_stream();
                     const uint32_t too_big = d.info().limits.max_work_group_size * 2;
                     Buffer x = d.allocate(4), y = d.allocate(4);
                     check_error(
                         [&] {
                           stream.launch(saxpy, LaunchConfig{{too_big, 1, 1}, {too_big, 1, 1}},
                                         {1.0f, x, y, 1u});
                         },
                         ErrorCode::InvalidArgument, {}, "a work-group of twice the limit");
                     stream.synchronize();
                   }});
  cases.push_back({"kernel.host.runs_where_host_kernels_run", [](const Device& d) {
                     const Kernel fill = host_kernel("fill", [](Index3 i, const KernelArgs& args) {
                       args.ptr<uint32_t>(0)[i[0]] = static_cast<uint32_t>(i[0] * 2);
                     });
                     Stream stream = d.create_stream();
                     Buffer out = d.allocate(64 * 4);
                     if (!d.info().has_feature(feature::kHostKernels)) {
                       check_error([&] { stream.launch(fill, LaunchConfig::linear(64), {out}); },
                                   ErrorCode::Unsupported, {"fill", d.id(), "host (C++) kernel"},
                                   "a host kernel");
                       throw NotSupported(d.id() + " runs no host kernels (and says so)");
                     }
                     stream.launch(fill, LaunchConfig::linear(64), {out});
                     std::vector<uint32_t> got(64);
                     stream.copy_to_host(got.data(), out, 64 * 4);
                     stream.synchronize();
                     for (uint32_t i = 0; i < 64; ++i) check(got[i] == 2 * i, "element");
                   }});
}

}  // namespace hal::cts
