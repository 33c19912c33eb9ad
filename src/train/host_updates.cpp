#include "train/host_updates.hpp"

#include <cmath>

#include "hal/kernel.hpp"
#include "ops/host_element_functions.hpp"

namespace hal::train {
using ops::host::with_float;

void sgd_in_place(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdScalars& c,
                  Stream& stream) {
  const bool momentum = buf.defined();
  const int64_t p_at = p.offset(), g_at = g.offset(), b_at = momentum ? buf.offset() : 0;
  with_float(p.dtype(), [&]<class T>() {
    const T lr = T(c.lr), decay = T(c.weight_decay), mom = T(c.momentum), undamped = T(c.undamped);
    const bool decayed = c.weight_decay != 0, first = c.first, nesterov = c.nesterov;
    const Kernel kernel = host_kernel("sgd_step", [=](const KernelChunk& chunk) {
      T* param = chunk.args.ptr<T>(0) + p_at;
      const T* grad = chunk.args.ptr<const T>(1) + g_at;
      T* b = momentum ? chunk.args.ptr<T>(2) + b_at : nullptr;
      for (uint64_t i = chunk.begin[0]; i < chunk.end[0]; ++i) {
        T d = decayed ? grad[i] + param[i] * decay : grad[i];
        if (momentum) {
          b[i] = first ? d : b[i] * mom + d * undamped;
          d = nesterov ? d + b[i] * mom : b[i];
        }
        param[i] = param[i] - d * lr;
      }
    });
    std::vector<KernelArg> args{p.storage(), g.storage()};
    if (momentum) args.emplace_back(buf.storage());
    stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(p.numel())), args);
  });
}

void adamw_in_place(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                    const AdamScalars& c, Stream& stream) {
  const int64_t p_at = p.offset(), g_at = g.offset(), m_at = m.offset(), v_at = v.offset();
  with_float(p.dtype(), [&]<class T>() {
    const T decay = T(c.decay), b1 = T(c.beta1), r1 = T(c.one_minus_beta1), b2 = T(c.beta2),
            r2 = T(c.one_minus_beta2), c2 = T(c.correction2_sqrt), eps = T(c.eps),
            step = T(c.step_size);
    const Kernel kernel = host_kernel("adamw_step", [=](const KernelChunk& chunk) {
      T* param = chunk.args.ptr<T>(0) + p_at;
      const T* grad = chunk.args.ptr<const T>(1) + g_at;
      T* m1 = chunk.args.ptr<T>(2) + m_at;
      T* m2 = chunk.args.ptr<T>(3) + v_at;
      for (uint64_t i = chunk.begin[0]; i < chunk.end[0]; ++i) {
        const T gi = grad[i];
        const T decayed = param[i] * decay;
        const T m_new = m1[i] * b1 + gi * r1;
        const T v_new = m2[i] * b2 + gi * gi * r2;
        const T denom = std::sqrt(v_new) / c2 + eps;
        m1[i] = m_new;
        m2[i] = v_new;
        param[i] = decayed - m_new / denom * step;
      }
    });
    stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(p.numel())),
                  {p.storage(), g.storage(), m.storage(), v.storage()});
  });
}

}  // namespace hal::train
