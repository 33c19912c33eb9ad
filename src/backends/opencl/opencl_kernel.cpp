// Compiling OpenCL C and portable-dialect kernels, through the on-disk kernel cache.
#include "backends/opencl/opencl_kernel.hpp"
#include "backends/opencl/opencl_kernel_params.hpp"

#include <utility>

#include "core/kernel_disk_cache.hpp"
#include "hal/log.hpp"

namespace hal::opencl {

const char* const kPortablePrelude = R"(// hal portable kernel dialect: OpenCL C
#define HAL_OPENCL 1
#define KERNEL __kernel
#define GLOBAL __global
#define SHARED __local
#define DEVICE_FN static inline
#define RESTRICT restrict
#define global_id(d) get_global_id(d)
#define local_id(d) get_local_id(d)
#define group_id(d) get_group_id(d)
#define global_size(d) get_global_size(d)
#define local_size(d) get_local_size(d)
#define num_groups(d) get_num_groups(d)
#define barrier() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#line 1
)";

OpenClKernel::OpenClKernel(std::string name, const OpenClDevice& device, cl_program program,
                           cl_kernel kernel, bool portable)
    : KernelImpl(std::move(name), &device),
      platform_(device.platform()),
      program_(program),
      kernel_(kernel),
      num_args_(info_value<cl_uint>(platform_->api->clGetKernelInfo, kernel, CL_KERNEL_NUM_ARGS)),
      portable_(portable) {
  size_t items = 0;
  if (platform_->api->clGetKernelWorkGroupInfo(kernel, device.native(), CL_KERNEL_WORK_GROUP_SIZE,
                                               sizeof items, &items, nullptr) == CL_SUCCESS &&
      items > 0)
    max_group_items_ = items;
  else
    max_group_items_ = device.info().limits.max_work_group_size;
}

OpenClKernel::~OpenClKernel() {
  platform_->api->clReleaseKernel(kernel_);
  platform_->api->clReleaseProgram(program_);
}

namespace {

// Argument information always: launches are checked against it (Kernel::params).
std::string build_options(const CompileOptions& options) {
  std::string text = std::string(kKernelArgInfoOption) + " ";
  for (const std::string& define : options.defines) text += "-D" + define + " ";
  text += options.flags;
  return text;
}

// Everything that changes the program binary, but for #include'd files: a kernel that reads any
// is not kept on disk (detail::disk_cache_refusal). Stored whole in the entry and compared on
// load.
std::string cache_key(const OpenClDevice& device, const std::string& options,
                      const std::string& code) {
  const DeviceInfo& info = device.info();
  const ClPlatform& platform = *device.platform();
  return "hal-opencl-program/1\nplatform: " + platform.name + " " + platform.version +
         "\ndevice: " + info.name + " " + info.uuid + "\ndriver: " + info.driver_version +
         "\nopencl_c: " + device.traits().opencl_c_version + "\noptions: " + options +
         "\nsource:\n" + code;
}

class Program {
 public:
  Program(const ClApi& api, cl_program program) : api_(api), program_(program) {}
  ~Program() {
    if (program_) api_.clReleaseProgram(program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  cl_program get() const { return program_; }
  cl_program release() { return std::exchange(program_, nullptr); }

 private:
  const ClApi& api_;
  cl_program program_;
};

std::string build_log(const ClApi& api, cl_program program, cl_device_id device) {
  size_t size = 0;
  api.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size)
    api.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log.empty() ? "(the driver gave no build log)" : log;
}

std::vector<unsigned char> program_binary(const ClApi& api, cl_program program) {
  size_t size = 0;
  if (api.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
          CL_SUCCESS ||
      size == 0)
    return {};
  std::vector<unsigned char> binary(size);
  unsigned char* pointers[1] = {binary.data()};
  if (api.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof pointers, pointers, nullptr) !=
      CL_SUCCESS)
    return {};
  return binary;
}

// A program built from a cached binary, or null when the driver refuses the binary.
cl_program build_from_binary(const OpenClDevice& device, const std::vector<unsigned char>& binary,
                             const std::string& options) {
  const ClApi& api = device.api();
  cl_device_id id = device.native();
  const size_t size = binary.size();
  const unsigned char* data = binary.data();
  cl_int binary_status = CL_SUCCESS;
  cl_int status = CL_SUCCESS;
  Program program(api, api.clCreateProgramWithBinary(device.context(), 1, &id, &size, &data,
                                                     &binary_status, &status));
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) return nullptr;
  if (api.clBuildProgram(program.get(), 1, &id, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
    return nullptr;
  return program.release();
}

cl_program build_from_source(const OpenClDevice& device, const std::string& code,
                             const std::string& options, const std::string& where) {
  const ClApi& api = device.api();
  cl_device_id id = device.native();
  const char* text = code.c_str();
  const size_t length = code.size();
  cl_int status = CL_SUCCESS;
  Program program(api, api.clCreateProgramWithSource(device.context(), 1, &text, &length, &status));
  check(status, where, "clCreateProgramWithSource");
  status = api.clBuildProgram(program.get(), 1, &id, options.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS)
    throw Error(ErrorCode::CompileFailed,
                where + " failed: " + status_name(status) + " (" + std::to_string(status) +
                    ")\noptions: " + (options.empty() ? "(none)" : options) + "\nbuild log:\n" +
                    build_log(api, program.get(), id),
                status);
  return program.release();
}

std::shared_ptr<KernelImpl> make_kernel(const OpenClDevice& device, cl_program program,
                                        const KernelSource& source, const CompileOptions& options,
                                        const std::string& where) {
  const ClApi& api = device.api();
  const std::string& name = source.name;
  Program owner(api, program);
  cl_int status = CL_SUCCESS;
  cl_kernel kernel = api.clCreateKernel(program, name.c_str(), &status);
  if (status == CL_INVALID_KERNEL_NAME) {
    std::string names = info_string(api.clGetProgramInfo, program, CL_PROGRAM_KERNEL_NAMES);
    throw Error(ErrorCode::NotFound,
                where + ": the program has no kernel '" + name +
                    "'; it has: " + (names.empty() ? "none" : names),
                status);
  }
  check(status, where, "clCreateKernel");
  auto made = std::make_shared<OpenClKernel>(name, device, owner.release(), kernel,
                                             source.language == KernelLanguage::portable);
  std::optional<std::vector<KernelParam>> params = reflected_params(api, kernel, made->num_args());
  if (params) size_typedef_scalars(*params, source, options);
  made->set_params(std::move(params));
  return made;
}

}  // namespace

CompiledKernel OpenClDevice::compile(const KernelSource& source, const CompileOptions& options) {
  const std::string where = "compile of " + std::string(to_string(source.language)) + " kernel '" +
                            source.name + "' for " + describe(*this);
  if (source.language == KernelLanguage::cuda)
    throw_unsupported(*this, "CUDA C++ kernels ('" + source.name +
                                 "'); write it in the portable dialect or OpenCL C");
  const std::string code =
      source.language == KernelLanguage::portable ? kPortablePrelude + source.code : source.code;
  const std::string flags = build_options(options);
  const std::string key = cache_key(*this, flags, code);
  const detail::KernelDiskCache disk("opencl");
  const bool use_disk = detail::may_use_disk_cache(options.disk_cache, code, options.flags, where);

  if (use_disk) {
    if (auto binary = disk.load(key)) {
      if (cl_program program = build_from_binary(*this, *binary, flags))
        return {make_kernel(*this, program, source, options, where), true};
      log(LogLevel::warn, where + ": the driver refused the cached binary " +
                              disk.entry_path(key).string() + "; rebuilding from source");
      disk.remove(key);
    }
  }
  cl_program program = build_from_source(*this, code, flags, where);
  if (use_disk) {
    std::vector<unsigned char> binary = program_binary(api(), program);
    if (!binary.empty()) disk.store(key, binary);
  }
  return {make_kernel(*this, program, source, options, where), false};
}

}  // namespace hal::opencl
