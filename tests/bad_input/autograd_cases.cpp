// Autograd and the layer ops: gradients of the wrong shape, roots that need none, graphs
// backpropagated twice, ops without a gradient, and the layer ops' bad operands.
#include "case_helpers.hpp"

namespace hal::test::bad_input {
namespace {

Tensor leaf(const Shape& shape, Stream& stream) {
  Tensor t = ones(shape, DType::f32, stream);
  t.requires_grad_();
  return t;
}

}  // namespace

Area autograd_cases() {
  using enum ErrorCode;
  return {
      "autograd",
      {
          {"backward_with_a_gradient_of_another_shape",
           [](const Device&, Stream& s) {
             const Tensor y = mul(leaf({2, 3}, s), leaf({2, 3}, s), s);
             y.backward(s, ones({3, 2}, DType::f32, s));
           },
           InvalidArgument, "must have the tensor's shape [2, 3]"},
          {"backward_of_many_elements_without_a_gradient",
           [](const Device&, Stream& s) { mul(leaf({4}, s), leaf({4}, s), s).backward(s); },
           InvalidArgument, "single-element"},
          {"backward_of_a_tensor_without_grad",
           [](const Device&, Stream& s) { ones({1}, DType::f32, s).backward(s); }, InvalidArgument,
           "does not require grad"},
          {"backward_twice_through_a_released_graph",
           [](const Device&, Stream& s) {
             const Tensor loss = sum(mul(leaf({3}, s), leaf({3}, s), s), {}, false, s);
             loss.backward(s);
             loss.backward(s);
           },
           InvalidState, "a second time"},
          {"backward_through_floor",
           [](const Device&, Stream& s) { sum(floor(leaf({3}, s), s), {}, false, s).backward(s); },
           Unsupported, "'floor'",
           [](const Device& d) { return supports_op(d, "floor", DType::f32); }},
          {"requires_grad_of_integers",
           [](const Device&, Stream& s) { zeros({2}, DType::i64, s).requires_grad_(); },
           InvalidArgument, "only floating"},
          {"concat_of_nothing", [](const Device&, Stream& s) { concat({}, 0, s); }, InvalidArgument,
           "no tensors"},
          {"concat_along_axis_7",
           [](const Device&, Stream& s) {
             concat({zeros({2}, DType::f32, s), zeros({2}, DType::f32, s)}, 7, s);
           },
           InvalidArgument, "axis 7"},
          with_another_device({"concat_of_operands_on_two_devices",
                               [](const Device& d, Stream& s) {
                                 Stream elsewhere = another_device(d).create_stream();
                                 const Tensor there = zeros({2}, DType::f32, elsewhere);
                                 elsewhere.synchronize();
                                 concat({zeros({2}, DType::f32, s), there}, 0, s);
                               },
                               InvalidArgument, "device"}),
          {"cross_entropy_with_float_targets",
           [](const Device&, Stream& s) {
             cross_entropy(zeros({2, 3}, DType::f32, s), zeros({2}, DType::f32, s), -100, 0, s);
           },
           InvalidArgument, "i32 or i64"},
          {"dropout_with_p_2",
           [](const Device&, Stream& s) { dropout(zeros({2}, DType::f32, s), 2, 0, s); },
           InvalidArgument, "p 2"},
          {"avg_pool_of_a_matrix",
           [](const Device&, Stream& s) {
             PoolOptions o;
             o.kernel = {2};
             avg_pool(zeros({2, 3}, DType::f32, s), o, s);
           },
           InvalidArgument, "[N, C, D1]"},
      }};
}

}  // namespace hal::test::bad_input
