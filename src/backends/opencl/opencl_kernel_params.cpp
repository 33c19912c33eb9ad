#include "backends/opencl/opencl_kernel_params.hpp"

#include "backends/opencl/cl_platform.hpp"
#include "core/declared_signature.hpp"
#include "core/scalar_type_size.hpp"

namespace hal::opencl {

std::optional<std::vector<KernelParam>> reflected_params(const ClApi& api, cl_kernel kernel,
                                                         cl_uint count) {
  std::vector<KernelParam> params;
  params.reserve(count);
  for (cl_uint i = 0; i < count; ++i) {
    auto get = [&](cl_kernel k, cl_kernel_arg_info what, size_t size, void* value, size_t* ret) {
      return api.clGetKernelArgInfo(k, i, what, size, value, ret);
    };
    cl_kernel_arg_address_qualifier space = 0;
    if (get(kernel, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof space, &space, nullptr) != CL_SUCCESS)
      return std::nullopt;
    KernelParam param;
    param.name = info_string(get, kernel, CL_KERNEL_ARG_NAME);
    // The type as the source spells it ("float*", "uint", "real" for a typedef).
    const std::string type = info_string(get, kernel, CL_KERNEL_ARG_TYPE_NAME);
    const auto qualifiers =
        info_value<cl_kernel_arg_type_qualifier>(get, kernel, CL_KERNEL_ARG_TYPE_QUALIFIER);
    const std::string constness = qualifiers & CL_KERNEL_ARG_TYPE_CONST ? "const " : "";
    switch (space) {
      case CL_KERNEL_ARG_ADDRESS_GLOBAL:
        param.kind = KernelArg::Kind::buffer;
        param.type = "__global " + constness + type;
        break;
      case CL_KERNEL_ARG_ADDRESS_CONSTANT:
        param.kind = KernelArg::Kind::buffer;
        param.type = "__constant " + constness + type;
        break;
      case CL_KERNEL_ARG_ADDRESS_LOCAL:
        param.kind = KernelArg::Kind::local_memory;
        param.type = "__local " + constness + type;
        break;
      default:  // private: passed by value
        param.kind = KernelArg::Kind::scalar;
        // 0 (any size) for types without a built-in size: typedefs, vectors, structs.
        param.scalar_bytes = detail::builtin_scalar_bytes(type).value_or(0);
        param.type = type;
        break;
    }
    params.push_back(std::move(param));
  }
  return params;
}

void size_typedef_scalars(std::vector<KernelParam>& params, const KernelSource& source,
                          const CompileOptions& options) {
  std::vector<size_t> unsized;
  std::vector<std::string> types;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].kind == KernelArg::Kind::scalar && params[i].scalar_bytes == 0) {
      unsized.push_back(i);
      types.push_back(params[i].type);
    }
  if (unsized.empty()) return;  // the common case: the source is not read
  const std::vector<size_t> sizes = detail::declared_type_sizes(source, options, types);
  for (size_t i = 0; i < unsized.size(); ++i) params[unsized[i]].scalar_bytes = sizes[i];
}

}  // namespace hal::opencl
