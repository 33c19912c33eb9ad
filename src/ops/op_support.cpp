// The op table as users read it: which ops a device runs in which dtypes, and by whom.
#include "hal/ops.hpp"
#include "ops/op_table.hpp"

namespace hal {

std::vector<OpSupport> supported_ops(const Device& device) {
  std::vector<OpSupport> out;
  for (const ops::OpDescriptor& op : ops::op_descriptors()) {
    OpSupport support{std::string(op.name), {}, {}};
    for (DType dtype : kAllDTypes) {
      const ops::OpPlan plan = ops::plan(op, dtype, device.info());
      if (!plan.runs()) continue;
      std::string kernel;
      if (!plan.implementation) {  // a composite op run as its parts
        kernel = "built from ";
        for (size_t i = 0; i < op.built_from.size(); ++i)
          kernel += (i ? ", " : "") + std::string(op.built_from[i]);
      } else {
        kernel = std::string(plan.implementation->provider);
      }
      if (plan.compute != dtype) kernel += " in " + std::string(to_string(plan.compute));
      support.dtypes.push_back(dtype);
      support.kernels.push_back(std::move(kernel));
    }
    out.push_back(std::move(support));
  }
  return out;
}

bool supports_op(const Device& device, std::string_view op, DType dtype) {
  return ops::plan(ops::descriptor(op), dtype, device.info()).runs();
}

}  // namespace hal
