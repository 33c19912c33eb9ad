// Products with an epilogue on the CPU (hal::MatmulEpilogue): oneDNN's matmul with the bias as
// its bias argument and the activation (gelu, tanh, sigmoid, silu) as an eltwise post-op,
// applied to each block of the result while oneDNN's kernel still holds it, in one pass over
// memory. f32, and bf16 or f16 where oneDNN has a kernel for them; elsewhere (no oneDNN, f64)
// the caller applies the epilogue after the product.
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "backends/cpu/cpu_onednn.hpp"
#include "backends/cpu/cpu_stream.hpp"
#include "hal/kernel.hpp"

namespace hal::cpu {

#if HAL_HAVE_ONEDNN
namespace {

using dnnl::memory;

struct Prepared {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};

// oneDNN's eltwise algorithm for an activation of GemmEpilogue, with its alpha. Not relu:
// oneDNN's vector kernels take max(x, 0), which turns NaN into 0 where hal's relu keeps it (the
// product then takes the bias alone, and relu follows as its own op).
std::optional<std::pair<dnnl::algorithm, float>> eltwise(const std::string& activation) {
  if (activation == "gelu") return std::pair{dnnl::algorithm::eltwise_gelu_erf, 0.0f};
  if (activation == "tanh") return std::pair{dnnl::algorithm::eltwise_tanh, 0.0f};
  if (activation == "sigmoid") return std::pair{dnnl::algorithm::eltwise_logistic, 0.0f};
  if (activation == "silu") return std::pair{dnnl::algorithm::eltwise_swish, 1.0f};  // x*s(1x)
  return std::nullopt;
}

// The primitive, or null where oneDNN has none for these operands (f64, f16 on most CPUs).
// oneDNN keeps made primitives in its own cache, so making the same one again is cheap.
std::shared_ptr<const Prepared> prepare(const GemmDesc& g, const GemmEpilogue& e) {
  const memory::data_type type = onednn::data_type(g.dtype);
  if (type == memory::data_type::undef) return nullptr;
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // two streams may run it at once
    if (!e.activation.empty()) {
      const auto algorithm = eltwise(e.activation);
      if (!algorithm) return nullptr;
      dnnl::post_ops post;
      post.append_eltwise(1.0f, algorithm->first, algorithm->second, 0.0f);
      attr.set_post_ops(post);
    }
    const memory::desc a = onednn::matrices(type, g.batch, g.m, g.k, g.a);
    const memory::desc b = onednn::matrices(type, g.batch, g.k, g.n, g.b);
    const memory::desc c = onednn::matrices(type, g.batch, g.m, g.n, g.c);
    const memory::desc bias({1, 1, g.n}, type, memory::format_tag::abc);
    const dnnl::matmul::desc desc =
        e.bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c);
    dnnl::matmul::primitive_desc pd(desc, attr, onednn::engine());
    return std::make_shared<Prepared>(Prepared{pd, dnnl::matmul(pd)});
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

void run(const GemmDesc& g, const GemmEpilogue& e, const Prepared& p, const KernelArgs& args) {
  const dnnl::engine& eng = onednn::engine();
  dnnl::stream stream(eng);
  const size_t element = size_of(g.dtype);
  const auto at = [&](size_t arg, uint64_t offset) {
    return static_cast<void*>(args.ptr<unsigned char>(arg) + offset * element);
  };
  std::unordered_map<int, memory> operands{
      {DNNL_ARG_SRC, memory(p.pd.src_desc(), eng, at(0, g.a.offset))},
      {DNNL_ARG_WEIGHTS, memory(p.pd.weights_desc(), eng, at(1, g.b.offset))},
      {DNNL_ARG_DST, memory(p.pd.dst_desc(), eng, at(2, g.c.offset))},
      {DNNL_ARG_SCRATCHPAD, memory(p.pd.scratchpad_desc(), eng)}};
  if (e.bias) operands.emplace(DNNL_ARG_BIAS, memory(p.pd.bias_desc(), eng, at(3, e.bias_offset)));
  p.primitive.execute(stream, operands);
  stream.wait();
}

}  // namespace

bool CpuStream::gemm_with_epilogue(const GemmDesc& desc, const GemmEpilogue& epilogue) {
  std::shared_ptr<const Prepared> prepared = prepare(desc, epilogue);
  if (!prepared) return false;
  const Kernel kernel =
      make_host_kernel("gemm_epilogue", [desc, epilogue, prepared](const KernelChunk& chunk) {
        run(desc, epilogue, *prepared, chunk.args);
      });
  // Without a bias, C stands in for its argument (never read).
  const KernelArg args[] = {Buffer(desc.a.buffer), Buffer(desc.b.buffer), Buffer(desc.c.buffer),
                            Buffer(epilogue.bias ? epilogue.bias : desc.c.buffer)};
  launch(kernel.impl(), LaunchConfig::linear(1), args);
  return true;
}

#else

bool CpuStream::gemm_with_epilogue(const GemmDesc&, const GemmEpilogue&) { return false; }

#endif

}  // namespace hal::cpu
