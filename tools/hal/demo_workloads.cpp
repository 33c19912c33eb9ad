#include "demo_workloads.hpp"

#include <cmath>

namespace hal::tool {
namespace {

// One elementwise or reduction op's share of a workload: f32 bytes read and written.
void add_op(Workload& w, double flops, double elements_moved) {
  w.flops += flops;
  w.bytes += 4 * elements_moved;
  w.launches += 1;
}

template <class Pass>
WorkloadResult timed_passes(Stream& stream, int repeat, Pass&& pass) {
  Tensor out = pass();  // warm-up: compiles kernels, fills the allocator's cache
  stream.synchronize();
  const double seconds = timed_on_device(stream, [&] {
    for (int i = 0; i < repeat; ++i) out = pass();
  });
  return {seconds / repeat, out.to_vector<float>(stream)};
}

}  // namespace

Workload mlp_workload(const DemoSizes& s) {
  const double b = s.batch, in = s.input, h = s.hidden, c = s.classes;
  Workload w;
  w.name = "mlp " + std::to_string(s.batch) + "x" + std::to_string(s.input) + "->" +
           std::to_string(s.hidden) + "->" + std::to_string(s.classes);
  add_op(w, 2 * b * in * h, b * in + in * h + b * h);  // x @ w1
  add_op(w, b * h, 2 * b * h + h);                     // + b1
  add_op(w, 8 * b * h, 2 * b * h);                     // gelu (tanh form: ~8 operations)
  add_op(w, 2 * b * h * c, b * h + h * c + b * c);     // @ w2
  add_op(w, b * c, 2 * b * c + c);                     // + b2
  // softmax as hal composes it: max, subtract, exp, sum, divide.
  add_op(w, b * c, b * c + b);
  add_op(w, b * c, 2 * b * c + b);
  add_op(w, b * c, 2 * b * c);
  add_op(w, b * c, b * c + b);
  add_op(w, b * c, 2 * b * c + b);
  w.memory_bytes =
      static_cast<uint64_t>(4 * (b * in + in * h + h + h * c + c + 2 * b * h + 3 * b * c));
  return w;
}

Workload matmul_workload(const DemoSizes& s) {
  return Workload::matmul(s.matmul, s.matmul, s.matmul);
}

WorkloadResult run_mlp(const Device& device, const DemoSizes& s) {
  Stream stream = device.create_stream();
  const double r1 = 1 / std::sqrt(double(s.input)), r2 = 1 / std::sqrt(double(s.hidden));
  const Tensor x = uniform({s.batch, s.input}, DType::f32, 10, stream, -1, 1);
  const Tensor w1 = uniform({s.input, s.hidden}, DType::f32, 11, stream, -r1, r1);
  const Tensor b1 = uniform({s.hidden}, DType::f32, 12, stream, -r1, r1);
  const Tensor w2 = uniform({s.hidden, s.classes}, DType::f32, 13, stream, -r2, r2);
  const Tensor b2 = uniform({s.classes}, DType::f32, 14, stream, -r2, r2);
  return timed_passes(stream, s.repeat, [&] {
    const Tensor hidden = gelu(add(matmul(x, w1, stream), b1, stream), stream);
    return softmax(add(matmul(hidden, w2, stream), b2, stream), -1, stream);
  });
}

WorkloadResult run_matmul(const Device& device, const DemoSizes& s) {
  Stream stream = device.create_stream();
  const Tensor a = uniform({s.matmul, s.matmul}, DType::f32, 20, stream, -1, 1);
  const Tensor b = uniform({s.matmul, s.matmul}, DType::f32, 21, stream, -1, 1);
  return timed_passes(stream, s.repeat, [&] { return matmul(a, b, stream); });
}

}  // namespace hal::tool
