// The optimizers' updates as single host kernels (devices with host kernels: the CPU), writing
// the parameter and its buffers in place: one pass per parameter, nothing allocated. The
// arithmetic is the elementwise programs' of sgd_adamw.cpp, in the same order.
#pragma once

#include <vector>

#include "hal/tensor.hpp"

namespace hal::train {

struct SgdScalars {
  double lr, weight_decay, momentum, undamped;  // undamped: 1 - dampening
  bool first, nesterov;
};
// p, g, and buf (undefined without momentum): contiguous, of p's dtype (f32 or f64).
void sgd_in_place(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdScalars& c,
                  Stream& stream);

struct AdamScalars {
  double decay, beta1, one_minus_beta1, beta2, one_minus_beta2, correction2_sqrt, eps, step_size;
};
void adamw_in_place(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                    const AdamScalars& c, Stream& stream);

}  // namespace hal::train
