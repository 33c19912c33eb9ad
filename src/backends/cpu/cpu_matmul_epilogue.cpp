// Products with an epilogue on the CPU (hal::MatmulEpilogue): oneDNN's matmul with the bias and
// the activation in it (cpu_onednn.hpp), one pass over the result. Where oneDNN has none for
// the dtype or the activation (no oneDNN, f64, relu) the caller applies the epilogue itself.
#include "backends/cpu/cpu_onednn.hpp"
#include "backends/cpu/cpu_stream.hpp"

namespace hal::cpu {

bool CpuStream::gemm_with_epilogue(const GemmDesc& desc, const GemmEpilogue& epilogue) {
#if HAL_HAVE_ONEDNN
  std::shared_ptr<const onednn::Matmul> prepared = onednn::prepare_matmul(desc, epilogue);
  if (!prepared) return false;
  const Kernel kernel =
      make_host_kernel("gemm_epilogue", [desc, epilogue, prepared](const KernelChunk& chunk) {
        onednn::run_matmul(desc, epilogue, *prepared, chunk.args);
      });
  // Without a bias, C stands in for its argument (never read).
  const KernelArg args[] = {Buffer(desc.a.buffer), Buffer(desc.b.buffer), Buffer(desc.c.buffer),
                            Buffer(epilogue.bias ? epilogue.bias : desc.c.buffer)};
  launch(kernel.impl(), LaunchConfig::linear(1), args);
  return true;
#else
  (void)desc;
  (void)epilogue;
  return false;
#endif
}

}  // namespace hal::cpu
