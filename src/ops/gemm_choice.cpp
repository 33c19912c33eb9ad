#include "ops/gemm_choice.hpp"

#include "hal/device.hpp"
#include "ops/shape_class.hpp"
#include "ops/tuning_store.hpp"

namespace hal::ops {

std::string gemm_shape_class(const GemmDesc& gemm) {
  std::string text;
  text += gemm.a.transposed ? 'T' : 'N';
  text += gemm.b.transposed ? 'T' : 'N';
  const auto size = [](int64_t v) { return std::to_string(class_size(static_cast<uint64_t>(v))); };
  return text + " m" + size(gemm.m) + " n" + size(gemm.n) + " k" + size(gemm.k);
}

std::string vendor_blas(const DeviceInfo& device) {
  if (device.backend() == "opencl") return "CLBlast";
  if (device.backend() == "cuda") return "cuBLAS";
  return std::string(device.backend()) + " BLAS";
}

namespace {

// What the table says for a class (parsed parameters included); the defaults where it says
// nothing.
GemmChoice choice_from(const DeviceInfo& device, const TuningTable& table,
                       const std::string& shape_class) {
  GemmChoice choice;
  choice.params = default_gemm_params(device);
  const TuneEntry* entry = nearest_entry(table, "matmul", "f32", shape_class);
  if (!entry) {
    choice.own_kernel = device.kind == DeviceKind::cpu && device.backend() == "opencl";
    return choice;
  }
  choice.own_kernel = entry->choice == "hal";
  // The tuned parameters even where the vendor BLAS won: the benchmarks time them.
  if (auto params = GemmParams::parse(entry->params); params && !unusable(*params, device))
    choice.params = *params;
  return choice;
}

}  // namespace

GemmChoice gemm_choice(const DeviceInfo& device, const GemmDesc& gemm) {
  if (gemm.dtype != DType::f32) return {};
  const auto table = tuning_table(device);
  if (table->entries.empty()) return choice_from(device, *table, {});
  const std::string shape_class = gemm_shape_class(gemm);
  return remembered<GemmChoice>(table, shape_class,
                                [&] { return choice_from(device, *table, shape_class); });
}

void chosen_gemm(const GemmDesc& gemm, Stream& stream) {
  const GemmChoice choice = gemm_choice(stream.device().info(), gemm);
  if (choice.own_kernel)
    portable_gemm(gemm, choice.params, stream);
  else
    stream.impl()->gemm(gemm);
}

}  // namespace hal::ops
