#include "core/kernel_arg_check.hpp"

namespace hal::detail {
namespace {

// "a 4-byte", "an 8-byte", "an 11-byte", "an 18-byte".
std::string sized(size_t bytes) {
  const std::string number = std::to_string(bytes);
  const bool vowel = number.front() == '8' || number == "11" || number == "18";
  return (vowel ? "an " : "a ") + number + "-byte";
}

// Local memory of 0 bytes matches no parameter: drivers refuse it (CL_INVALID_ARG_SIZE).
bool matches(const KernelParam& param, const KernelArg& arg) {
  if (param.kind != arg.kind()) return false;
  if (param.kind == KernelArg::Kind::local_memory) return arg.offset() > 0;
  return param.kind != KernelArg::Kind::scalar || param.scalar_bytes == 0 ||
         param.scalar_bytes == arg.scalar_size();
}

// "a buffer", "a 4-byte scalar", "a scalar" (of any size), "local memory".
std::string kind_of(const KernelParam& param) {
  switch (param.kind) {
    case KernelArg::Kind::buffer:
      return "a buffer";
    case KernelArg::Kind::scalar:
      return param.scalar_bytes ? sized(param.scalar_bytes) + " scalar" : "a scalar";
    case KernelArg::Kind::local_memory:
      return "local memory";
  }
  return "an argument of unknown kind";
}

// "(float a, __global const float* x)", or "(a: a 4-byte scalar, x: a buffer)" for parameters
// declared without their types (host kernels).
std::string signature(const std::vector<KernelParam>& params) {
  std::string text = "(";
  for (const KernelParam& param : params) {
    if (text.size() > 1) text += ", ";
    if (param.type.empty())
      text += (param.name.empty() ? "" : param.name + ": ") + kind_of(param);
    else
      text += param.type + (param.name.empty() ? "" : " " + param.name);
  }
  return text + ")";
}

}  // namespace

std::string describe(const KernelParam& param) {
  return kind_of(param) + (param.type.empty() ? "" : " (" + param.type + ")");
}

std::string describe(const KernelArg& arg) {
  switch (arg.kind()) {
    case KernelArg::Kind::buffer:
      return "a buffer";
    case KernelArg::Kind::scalar:
      return sized(arg.scalar_size()) + " scalar";
    case KernelArg::Kind::local_memory:
      return std::to_string(arg.offset()) + " bytes of local memory";
  }
  return "an argument of unknown kind";
}

std::optional<std::string> argument_mismatch(const std::vector<KernelParam>& params,
                                             std::span<const KernelArg> args) {
  if (args.size() != params.size())
    return "the kernel takes " + std::to_string(params.size()) + " arguments, " +
           std::to_string(args.size()) + " given; its signature is " + signature(params);
  for (size_t i = 0; i < args.size(); ++i) {
    if (matches(params[i], args[i])) continue;
    const std::string name = params[i].name.empty() ? "" : " (" + params[i].name + ")";
    return "argument " + std::to_string(i) + name + ": the kernel takes " + describe(params[i]) +
           ", given " + describe(args[i]) +
           (params[i].kind == KernelArg::Kind::local_memory &&
                    args[i].kind() == KernelArg::Kind::local_memory
                ? " (local memory needs at least 1 byte)"
                : "");
  }
  return std::nullopt;
}

}  // namespace hal::detail
