// Kernels: compiling what is not a kernel, and launching with the wrong arguments, buffers of
// other devices, absurd local memory or geometry.
#include <stdexcept>

#include "case_helpers.hpp"

namespace hal::test::bad_input {
namespace {

constexpr const char* kPortableSaxpy = R"(
KERNEL void saxpy(float a, GLOBAL const float* x, GLOBAL float* y, uint n) {
  size_t i = global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

bool is_sim(const Device& device) { return device.info().backend() == "sim"; }
bool compiles(const Device& device) { return compiles_portable_kernels(device); }
// Devices saxpy() below has a kernel for. Vulkan devices take SPIR-V written to hal's Vulkan
// interface; tests/vulkan checks their launch errors.
bool has_saxpy(const Device& device) {
  return runs_host_kernels(device) || compiles(device) || is_sim(device);
}

// saxpy(float a, buffer x, buffer y, uint n) as `device` runs it: a host kernel on the CPU,
// sim's built-in one, or the portable source compiled.
Kernel saxpy(const Device& device) {
  if (runs_host_kernels(device))
    return host_kernel("saxpy", [](Index3 i, const KernelArgs& args) {
      const float a = args.scalar<float>(0);
      const float* x = args.ptr<float>(1);
      float* y = args.ptr<float>(2);
      if (i[0] < args.scalar<uint32_t>(3)) y[i[0]] = a * x[i[0]] + y[i[0]];
    });
  if (is_sim(device)) return device.compile({"saxpy", "kernel saxpy", KernelLanguage::native});
  return device.compile({"saxpy", kPortableSaxpy});
}

// Launches saxpy over 16 items with `args` and waits for it.
void launch_saxpy(const Device& device, Stream& stream, std::initializer_list<KernelArg> args,
                  LaunchConfig config = LaunchConfig::linear(16)) {
  stream.launch(saxpy(device), config, args);
  stream.synchronize();
}

}  // namespace

Area kernel_cases() {
  using enum ErrorCode;
  Area area{
      "kernels",
      {
          {"launch_of_an_empty_kernel",
           [](const Device&, Stream& s) { s.launch(Kernel(), LaunchConfig::linear(1)); },
           InvalidArgument, "empty kernel"},
          {"launch_with_a_zero_global_size",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, x, y, 16u}, LaunchConfig{{16, 0, 1}});
           },
           InvalidArgument, "zero dimension"},
          {"launch_of_2_pow_65_items",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, x, y, 16u},
                          LaunchConfig{{uint64_t{1} << 32, uint64_t{1} << 32, 2}});
           },
           InvalidArgument, "overflows 64 bits"},
          {"launch_with_2_pow_40_bytes_of_local_memory",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, x, y, 16u, KernelArg::local_memory(size_t{1} << 40)});
           },
           // Refused either way: by the kernel's signature where it is known (saxpy takes four
           // arguments), else by the device's local-memory limit.
           InvalidArgument, "launch of 'saxpy'",
           [](const Device& d) { return d.info().limits.max_shared_memory_bytes > 0; }},
          {"launch_with_a_buffer_offset_past_its_end",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, KernelArg(x, 65), y, 16u});
           },
           OutOfRange, "past the end"},
          {"launch_with_a_buffer_offset_of_size_max",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, x, KernelArg(y, kSizeMax), 16u});
           },
           OutOfRange, "past the end"},
          {"launch_with_an_empty_buffer",
           [](const Device& d, Stream& s) {
             const Buffer y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, Buffer(), y, 16u});
           },
           InvalidArgument, "empty buffer"},
          with_another_device(
              {"launch_with_a_buffer_of_another_device",
               [](const Device& d, Stream& s) {
                 const Buffer x = another_device(d).allocate(64), y = d.allocate(64);
                 launch_saxpy(d, s, {2.0f, x, y, 16u});
               },
               InvalidArgument, "copy it first",
               // A host kernel may reach another device's buffer where the host can address it.
               [](const Device& d) { return !runs_host_kernels(d); }}),
          with_another_device(
              {"launch_of_a_kernel_compiled_for_another_device",
               [](const Device& d, Stream& s) {
                 s.launch(saxpy(another_compiling_device(d)), LaunchConfig::linear(1));
               },
               InvalidArgument, "the kernel was compiled for",
               [](const Device& d) { return static_cast<bool>(another_compiling_device(d)); }}),
          {"launch_of_a_host_kernel_on_a_device_without_them",
           [](const Device&, Stream& s) {
             s.launch(host_kernel("noop", [](Index3, const KernelArgs&) {}),
                      LaunchConfig::linear(1));
           },
           Unsupported, "host (C++) kernel", [](const Device& d) { return !runs_host_kernels(d); }},
          {"host_kernel_of_an_empty_function",
           [](const Device&, Stream&) { host_kernel("empty", HostKernelFn()); }, InvalidArgument,
           "empty function"},
          {"host_kernel_reading_an_argument_that_is_not_there",
           [](const Device& d, Stream& s) { launch_saxpy(d, s, {2.0f}); }, AsyncFailure,
           "is not a buffer", runs_host_kernels},
          {"host_kernel_reading_a_scalar_of_another_size",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0, x, y, 16u});
           },
           AsyncFailure, "8-byte scalar, read as 4 bytes", runs_host_kernels},
          {"host_kernel_that_throws",
           [](const Device&, Stream& s) {
             s.launch(host_kernel("throws",
                                  [](Index3, const KernelArgs&) {
                                    throw std::runtime_error("thrown by the kernel");
                                  }),
                      LaunchConfig::linear(4));
             s.synchronize();
           },
           AsyncFailure, "thrown by the kernel", runs_host_kernels},
          {"launch_with_too_few_arguments",
           [](const Device& d, Stream& s) { launch_saxpy(d, s, {2.0f}); }, InvalidArgument,
           "takes 4 arguments", runs_compiled_kernels},
          {"launch_with_too_many_arguments",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, x, y, 16u, 5u});
           },
           InvalidArgument, "takes 4 arguments", runs_compiled_kernels},
          {"launch_with_a_buffer_where_a_float_goes",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {x, x, y, 16u});
           },
           InvalidArgument, "argument 0", runs_compiled_kernels},
          // An 8-byte scalar is what PoCL took for a cl_mem (and crashed on); the launch checks
          // it against the kernel's signature now, before any driver sees it.
          {"launch_with_an_8_byte_scalar_where_a_buffer_goes",
           [](const Device& d, Stream& s) {
             const Buffer y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, uint64_t{12345678}, y, 16u});
           },
           InvalidArgument, "argument 1", runs_compiled_kernels},
          {"launch_with_a_4_byte_scalar_where_a_buffer_goes",
           [](const Device& d, Stream& s) {
             const Buffer y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, 7u, y, 16u});
           },
           InvalidArgument, "argument 1", runs_compiled_kernels},
          // OpenCL's limit; the CPU takes `local` as a hint and sim runs any group size.
          {"launch_with_a_work_group_of_2_pow_31_items",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, x, y, 16u}, LaunchConfig{{16, 1, 1}, {1u << 31, 1, 1}});
           },
           InvalidArgument, "work items",
           [](const Device& d) { return d.info().backend() == "opencl"; }},
          {"launch_with_a_local_size_that_does_not_divide_the_global_size",
           [](const Device& d, Stream& s) {
             const Buffer x = d.allocate(64), y = d.allocate(64);
             launch_saxpy(d, s, {2.0f, x, y, 10u}, LaunchConfig{{10, 1, 1}, {3, 1, 1}});
           },
           Ok, ""},
          {"compile_without_a_name",
           [](const Device& d, Stream&) {
             d.compile({"", kPortableSaxpy});
           },
           InvalidArgument, "no name"},
          {"compile_of_an_empty_source",
           [](const Device& d, Stream&) {
             d.compile({"saxpy", ""});
           },
           InvalidArgument, "source is empty"},
          {"compile_with_a_define_holding_a_newline",
           [](const Device& d, Stream&) {
             d.compile({"saxpy", kPortableSaxpy}, {.defines = {"X\n#error injected"}});
           },
           InvalidArgument, "is not NAME or NAME=VALUE"},
          {"compile_of_a_syntax_error",
           [](const Device& d, Stream&) {
             d.compile({"broken", "KERNEL void broken(GLOBAL float* x) { x[0] = ; }"});
           },
           CompileFailed, "broken", runs_compiled_kernels},
          // OpenCL finds the program has no such kernel (NotFound); sim's compiler refuses the
          // source (CompileFailed).
          {"compile_of_a_missing_entry_point",
           [](const Device& d, Stream&) {
             d.compile({"nowhere", kPortableSaxpy});
           },
           NotFound, "no kernel 'nowhere'",
           [](const Device& d) { return runs_compiled_kernels(d) && !is_sim(d); }},
          {"compile_of_a_missing_entry_point_on_sim",
           [](const Device& d, Stream&) {
             d.compile({"nowhere", "kernel saxpy", KernelLanguage::native});
           },
           CompileFailed, "no kernel 'nowhere'", is_sim},
          {"compile_in_language_77",
           [](const Device& d, Stream&) {
             d.compile({"saxpy", kPortableSaxpy, static_cast<KernelLanguage>(77)});
           },
           InvalidArgument, "kernel language 77 is not one of hal's"},
          {"compile_on_a_device_without_a_compiler",
           [](const Device& d, Stream&) {
             d.compile({"saxpy", kPortableSaxpy});
           },
           Unsupported, "compiling kernels", [](const Device& d) { return !compiles(d); }},
      }};
  // The launches of saxpy on the device itself need a saxpy there.
  for (Case& c : area.cases) {
    if (!c.name.starts_with("launch_with") && c.name != "launch_of_2_pow_65_items") continue;
    c.applies = [applies = c.applies](const Device& d) {
      return has_saxpy(d) && (!applies || applies(d));
    };
  }
  return area;
}

}  // namespace hal::test::bad_input
