#include "ops/fallback.hpp"
#include "core/host_cpu.hpp"

#include <cstdlib>
#include <string>

#include "core/device_core.hpp"
#include "core/error_context.hpp"
#include "core/trace_record.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "ops/op_checks.hpp"

namespace hal {
namespace {

bool fallback_by_environment() {
  const char* value = std::getenv("HAL_OPS_FALLBACK");
  return value != nullptr && std::string_view(value) == "cpu";
}

bool& thread_allows_fallback() {
  thread_local bool allowed = fallback_by_environment();
  return allowed;
}

thread_local int op_depth = 0;

struct DepthGuard {
  DepthGuard() { ++op_depth; }
  ~DepthGuard() { --op_depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

}  // namespace

CpuFallback::CpuFallback(bool allowed) : previous_(thread_allows_fallback()) {
  thread_allows_fallback() = allowed;
}

CpuFallback::~CpuFallback() { thread_allows_fallback() = previous_; }

bool CpuFallback::allowed() { return thread_allows_fallback(); }

namespace ops {

namespace {

// An outermost op: its errors name it, and an op the device refuses may run on cpu:0.
[[gnu::always_inline]] inline Tensor run_outermost(std::string_view op, OpInputs inputs,
                                                   Stream& stream, const OpBody& body) {
  DepthGuard outermost;
  const detail::ErrorContext context(device_of(stream).info().id, op);
  if (!CpuFallback::allowed()) return body(inputs, stream);
  std::string refusal;
  try {
    // A refusal here is handled by the fallback below; any other error is the caller's.
    const detail::ErrorReportsMuted handled;
    return body(inputs, stream);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Unsupported) {
      detail::report(error);
      throw;
    }
    refusal = error.message();
  }
  const Device here = stream.device();
  const Device cpu = hal::detail::host_cpu();
  if (here == cpu) throw Error(ErrorCode::Unsupported, refusal);
  if (log_enabled(LogLevel::warn))
    log(LogLevel::warn, std::string(op) + " runs on cpu:0 instead of " + here.id() +
                            ", with its data copied both ways: " + refusal);
  // The copies to cpu:0 are enqueued on `stream`; waiting for it is what orders the CPU's
  // work after them. Fallback is a slow path by nature, so it is synchronous.
  std::vector<Tensor> copies;
  copies.reserve(inputs.size());
  for (const Tensor* input : inputs)
    copies.push_back(input->defined() ? input->to(cpu, stream) : Tensor());
  std::vector<const Tensor*> on_cpu_inputs;
  for (const Tensor& copy : copies) on_cpu_inputs.push_back(&copy);
  stream.synchronize();
  // A spare cpu:0 stream, given back once its work has completed (not after an error).
  detail::DeviceCore& cpu_core = detail::core_of(*cpu.impl());
  Stream on_cpu(cpu_core.borrow_stream());
  Tensor result;
  try {
    result = body(on_cpu_inputs, on_cpu);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Unsupported) throw;
    throw Error(ErrorCode::Unsupported, refusal + "; nor can cpu:0: " + error.message());
  }
  on_cpu.synchronize();
  cpu_core.give_back_stream(on_cpu.impl());
  return result.to(here, stream);
}

// The same in a span on the stream's track, apart so that tracing off costs run_op one branch.
[[gnu::noinline, gnu::cold]] Tensor traced_op(std::string_view op, OpInputs inputs, Stream& stream,
                                              const OpBody& body) {
  const trace::detail::Span span(trace::detail::stream_track(*stream.impl()), "op",
                                 std::string(op));
  return run_outermost(op, inputs, stream, body);
}

}  // namespace

Tensor run_op(std::string_view op, OpInputs inputs, Stream& stream, const OpBody& body) {
  if (op_depth > 0) return body(inputs, stream);
  if (trace::enabled()) [[unlikely]]
    return traced_op(op, inputs, stream, body);
  return run_outermost(op, inputs, stream, body);
}

Tensor run_op(std::string_view op, const std::vector<Tensor>& inputs, Stream& stream,
              const std::function<Tensor(const std::vector<Tensor>&, Stream&)>& body) {
  std::vector<const Tensor*> operands;
  operands.reserve(inputs.size());
  for (const Tensor& input : inputs) operands.push_back(&input);
  return run_op(op, operands, stream, [&body](OpInputs in, Stream& s) {
    std::vector<Tensor> tensors;
    tensors.reserve(in.size());
    for (const Tensor* input : in) tensors.push_back(*input);
    return body(tensors, s);
  });
}

}  // namespace ops
}  // namespace hal
