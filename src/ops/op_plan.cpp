// How an op runs on a device for a dtype: the implementation the table holds, or the dtype it
// is converted to first, or why it cannot run. The ops and `hal ops` both ask here.
#include <array>
#include <cstdint>

#include "core/device_core.hpp"
#include "hal/error.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_table.hpp"

namespace hal::ops {
namespace {

using namespace dtypes;

bool implemented(const OpDescriptor& op, DType dtype, const DeviceInfo& device);

bool parts_run(const OpDescriptor& op, DType dtype, const DeviceInfo& device) {
  for (std::string_view part : op.built_from)
    if (!implemented(descriptor(part), dtype, device)) return false;
  return true;
}

bool implemented(const OpDescriptor& op, DType dtype, const DeviceInfo& device) {
  if (find_implementation(op, dtype, device) != nullptr) return true;
  return op.family == OpFamily::composite && parts_run(op, dtype, device);
}

bool casts(DType from, DType to, const DeviceInfo& device) {
  return find_implementation(cast_descriptor(), from, device) != nullptr &&
         find_implementation(cast_descriptor(), to, device) != nullptr;
}

// The dtype `op` must compute in for `input`, whatever the device: sums of integers count in
// i64 (u64's in u64), element functions of integers compute in f32.
DType required_compute(const OpDescriptor& op, DType input) {
  if (op.result == ResultRule::counting && !kFloating.has(input))
    return input == DType::u64 ? DType::u64 : DType::i64;
  if (op.result == ResultRule::floating && !kFloating.has(input) && op.family == OpFamily::unary)
    return DType::f32;
  return input;
}

std::string what_runs(const OpDescriptor& op, const DeviceInfo& device) {
  if (op.family == OpFamily::composite) {
    std::string parts;
    for (std::string_view part : op.built_from)
      parts += (parts.empty() ? "" : ", ") + std::string(part);
    return "it is built from " + parts + ", which " + device.id + " does not all run in that dtype";
  }
  DTypeSet runs;
  for (DType dtype : kAllDTypes)
    if (find_implementation(op, dtype, device)) runs = runs | DTypeSet{dtype};
  if (runs.empty()) return device.id + " has no kernel for it in any dtype";
  return device.id + " runs it in " + runs.describe();
}

}  // namespace

const OpImplementation* find_implementation(const OpDescriptor& op, DType dtype,
                                            const DeviceInfo& device) {
  const OpImplementation* best = nullptr;
  for (const OpImplementation& candidate : implementations_of(op)) {
    if (!candidate.dtypes.has(dtype) || !candidate.runs_on(device)) continue;
    if (candidate.takes && !candidate.takes(dtype, device)) continue;
    if (!best || candidate.priority > best->priority) best = &candidate;
  }
  return best;
}

OpPlan plan(const OpDescriptor& op, DType input, const DeviceInfo& device) {
  OpPlan out;
  out.op = &op;
  out.input = input;
  out.result = result_dtype(op, input);
  if (!op.dtypes.has(input)) {
    out.refusal = std::string(op.name) + " takes " + op.dtypes.describe();
    return out;
  }
  // mean of integers: an exact i64 sum, converted to f32 and divided.
  if (op.family == OpFamily::reduce && op.code == static_cast<uint8_t>(Reduce::mean) &&
      !kFloating.has(input)) {
    const OpPlan total = plan(descriptor(Reduce::sum), input, device);
    out.compute = DType::i64;
    out.implementation = total.implementation;
    if (!total.runs())
      out.refusal = total.refusal;
    else if (!casts(DType::i64, DType::f32, device) ||
             !implemented(descriptor(Binary::div), DType::f32, device))
      out.refusal = device.id + " cannot divide the i64 sum in f32 (it lacks cast or div in f32)";
    return out;
  }
  const DType required = required_compute(op, input);
  // Candidates: the required dtype itself, then f32 for f16 and bf16 without their own kernel.
  const DType candidates[] = {required, DType::f32};
  for (size_t i = 0; i < (kHalf.has(required) ? 2u : 1u); ++i) {
    const DType compute = candidates[i];
    if (!implemented(op, compute, device)) continue;
    // A composite op with a kernel of its own in f32 keeps it rather than run its parts in
    // f16 or bf16 (the CPU's softmax, norms, pooling: one pass, accumulating in f32).
    if (i == 0 && kHalf.has(compute) && op.family == OpFamily::composite &&
        !find_implementation(op, compute, device) && find_implementation(op, DType::f32, device))
      continue;
    if (compute != input && !casts(input, compute, device)) {
      out.compute = compute;
      out.refusal = device.id + " computes " + std::string(op.name) + " of " +
                    std::string(to_string(input)) + " in " + std::string(to_string(compute)) +
                    " and has no cast between them";
      return out;
    }
    out.compute = compute;
    out.implementation = find_implementation(op, compute, device);  // composites: maybe none
    return out;
  }
  out.compute = required;
  out.refusal = what_runs(op, device);
  return out;
}

namespace {

// Plans that ran, per thread, by (op, input dtype, device): an op call resolves its kernel from
// the table once, then finds it here. A device's DeviceInfo stays put while its core lives
// (the core holds the device), and the generation changes when cores are shut down.
struct CachedPlan {
  const OpDescriptor* op = nullptr;
  const DeviceInfo* device = nullptr;
  uint64_t generation = 0;
  DType input{}, compute{}, result{};
  const OpImplementation* implementation = nullptr;
};
constexpr size_t kCachedPlans = 64;
thread_local std::array<CachedPlan, kCachedPlans> cached_plans;

CachedPlan& slot_of(const OpDescriptor& op, DType input, const DeviceInfo& device) {
  const auto key = reinterpret_cast<uintptr_t>(&op) ^ reinterpret_cast<uintptr_t>(&device) >> 4 ^
                   static_cast<uintptr_t>(input) * 0x9E3779B9u;
  return cached_plans[(key ^ key >> 7) % kCachedPlans];
}

}  // namespace

OpPlan plan_or_throw(const OpDescriptor& op, DType input,
                     std::initializer_list<const Tensor*> operands) {
  const Tensor& first = **operands.begin();
  const DeviceInfo& info = device_of(first).info();
  const uint64_t generation = detail::device_generation();
  CachedPlan& slot = slot_of(op, input, info);
  if (slot.op == &op && slot.device == &info && slot.input == input &&
      slot.generation == generation) [[likely]]
    return OpPlan{&op, input, slot.compute, slot.result, slot.implementation, {}};
  const Device device = first.device();
  OpPlan out = plan(op, input, info);
  if (out.runs()) {
    slot = CachedPlan{&op, &info, generation, input, out.compute, out.result, out.implementation};
    return out;
  }
  {
    std::string described;
    for (const Tensor* operand : operands)
      if (operand->defined()) described += (described.empty() ? "" : " and ") + operand->describe();
    throw Error(ErrorCode::Unsupported, std::string(op.name) + " of " + described +
                                            ": no kernel for " + std::string(to_string(input)) +
                                            " on " + device.id() + " (" + out.refusal + ")");
  }
}

}  // namespace hal::ops
