// Ops: operands that do not fit together, axes out of range, dtypes that are not hal's, and
// operands or streams of other devices.
#include "case_helpers.hpp"

namespace hal::test::bad_input {
namespace {

Tensor f32(const Shape& shape, Stream& stream) { return zeros(shape, DType::f32, stream); }

}  // namespace

Area op_cases() {
  using enum ErrorCode;
  return {"ops",
          {
              {"add_of_shapes_that_do_not_broadcast",
               [](const Device&, Stream& s) {
                 add(f32({2, 3}, s), f32({4}, s), s);
               },
               InvalidArgument, "broadcast"},
              with_another_device({"add_of_operands_on_two_devices",
                                   [](const Device& d, Stream& s) {
                                     Stream elsewhere = another_device(d).create_stream();
                                     const Tensor there = f32({4}, elsewhere);
                                     elsewhere.synchronize();
                                     add(f32({4}, s), there, s);
                                   },
                                   InvalidArgument, "device"}),
              with_another_device({"add_on_a_stream_of_another_device",
                                   [](const Device& d, Stream& s) {
                                     const Tensor a = f32({4}, s);
                                     s.synchronize();
                                     Stream elsewhere = another_device(d).create_stream();
                                     add(a, a, elsewhere);
                                   },
                                   InvalidArgument, "stream"}),
              {"add_of_an_undefined_tensor",
               [](const Device&, Stream& s) { add(f32({4}, s), Tensor(), s); }, InvalidArgument,
               "undefined"},
              {"cast_to_dtype_99",
               [](const Device&, Stream& s) { cast(f32({2}, s), static_cast<DType>(99), s); },
               InvalidArgument, "dtype 99 is not one of hal's dtypes"},
              {"sum_over_axis_5_of_a_2d_tensor",
               [](const Device&, Stream& s) {
                 sum(f32({2, 3}, s), {5}, false, s);
               },
               InvalidArgument, "axis"},
              {"sum_over_axis_int64_min",
               [](const Device&, Stream& s) {
                 sum(f32({2, 3}, s), {kInt64Min}, false, s);
               },
               InvalidArgument, "axis"},
              {"sum_over_one_axis_twice",
               [](const Device&, Stream& s) {
                 sum(f32({2, 3}, s), {0, -2}, false, s);
               },
               InvalidArgument, "axis"},
              {"max_of_no_elements",
               [](const Device&, Stream& s) {
                 max(f32({0, 3}, s), {0}, false, s);
               },
               InvalidArgument, "no elements"},
              {"argmax_of_no_elements",
               [](const Device&, Stream& s) { argmax(f32({0}, s), {}, false, s); }, InvalidArgument,
               "no elements"},
              {"softmax_over_axis_int64_max",
               [](const Device&, Stream& s) {
                 softmax(f32({2, 3}, s), kInt64Max, s);
               },
               InvalidArgument, "axis"},
              {"matmul_of_mismatched_inner_sizes",
               [](const Device&, Stream& s) {
                 matmul(f32({2, 3}, s), f32({4, 5}, s), s);
               },
               InvalidArgument, "matmul"},
              {"matmul_of_a_0d_tensor",
               [](const Device&, Stream& s) {
                 matmul(f32({}, s), f32({4, 5}, s), s);
               },
               InvalidArgument, "matmul"},
              {"matmul_of_batches_that_do_not_broadcast",
               [](const Device&, Stream& s) {
                 matmul(f32({2, 3, 4}, s), f32({5, 4, 3}, s), s);
               },
               InvalidArgument, "broadcast"},
              {"conv_transpose_with_an_output_padding_of_the_stride",
               [](const Device&, Stream& s) {
                 ConvTransposeOptions o;
                 o.strides = {2};
                 o.output_padding = {2};
                 conv_transpose(f32({1, 2, 5}, s), f32({2, 3, 3}, s), Tensor(), o, s);
               },
               InvalidArgument,
               "output_padding [2]: 2 in spatial dimension 0 must lie below the stride 2"},
              // An expanded view as wide as its bytes can be counted, by the largest stride: the
              // output's size is refused before it overflows.
              {"conv_transpose_to_more_than_2^62_elements",
               [](const Device&, Stream& s) {
                 ConvTransposeOptions o;
                 o.strides = {int64_t{1} << 24};
                 const Tensor wide = f32({1, 1, 1}, s).expand({1, 1, int64_t{1} << 59});
                 conv_transpose(wide, f32({1, 1, 3}, s), Tensor(), o, s);
               },
               InvalidArgument, "more than 2^62 elements"},
              {"layer_norm_over_a_shape_x_does_not_end_with",
               [](const Device&, Stream& s) {
                 layer_norm(f32({2, 3}, s), {4}, Tensor(), Tensor(), 1e-5, s);
               },
               InvalidArgument, "layer_norm"},
              {"layer_norm_with_a_weight_of_the_wrong_shape",
               [](const Device&, Stream& s) {
                 layer_norm(f32({2, 3}, s), {3}, f32({2}, s), Tensor(), 1e-5, s);
               },
               InvalidArgument, "weight"},
              {"rms_norm_over_a_shape_of_int64_max",
               [](const Device&, Stream& s) {
                 rms_norm(f32({2, 3}, s), {kInt64Max}, Tensor(), 1e-5, s);
               },
               InvalidArgument, "rms_norm"},
              {"where_of_a_condition_that_does_not_broadcast",
               [](const Device&, Stream& s) {
                 where(zeros({5}, DType::boolean, s), f32({4}, s), f32({4}, s), s);
               },
               InvalidArgument, "broadcast"},
              {"matmul_of_i32",
               [](const Device&, Stream& s) {
                 matmul(zeros({2, 2}, DType::i32, s), zeros({2, 2}, DType::i32, s), s);
               },
               Unsupported, "i32"},
              {"supports_op_of_an_unknown_op",
               [](const Device& d, Stream&) { supports_op(d, "frobnicate", DType::f32); }, NotFound,
               "frobnicate"},
              {"broadcast_shapes_with_a_negative_size",
               [](const Device&, Stream&) {
                 broadcast_shapes({2, -3}, {3});
               },
               InvalidArgument, "do not broadcast"},
          }};
}

}  // namespace hal::test::bad_input
