// Tensor creation and views: sizes, strides, offsets and dtypes at and past their limits.
#include <cmath>

#include "case_helpers.hpp"

namespace hal::test::bad_input {

Area tensor_cases() {
  using enum ErrorCode;
  const double nan = std::nan("");
  return {
      "tensor",
      {
          {"zeros_whose_element_count_overflows",
           [](const Device&, Stream& s) {
             zeros({int64_t{1} << 32, int64_t{1} << 32}, DType::f32, s);
           },
           InvalidArgument, "more elements than int64 can count"},
          {"expand_to_2_pow_93_elements",
           [](const Device& d, Stream&) {
             empty({1}, DType::f32, d)
                 .expand({int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31});
           },
           InvalidArgument, "more elements than int64"},
          {"empty_f64_of_2_pow_61_elements",
           [](const Device& d, Stream&) { empty({int64_t{1} << 61}, DType::f64, d); },
           InvalidArgument, "more bytes than int64 can count"},
          {"stride_2_pow_62_plus_2_pow_40_on_a_64_byte_buffer",
           [](const Device& d, Stream&) {
             Tensor(d.allocate(64), DType::f32, {4}, {(int64_t{1} << 62) + (int64_t{1} << 40)});
           },
           InvalidArgument, "furthest element overflows int64"},
          {"view_reaching_past_its_buffer",
           [](const Device& d, Stream&) {
             Tensor(d.allocate(64), DType::f32, {2}, {int64_t{1} << 40});
           },
           OutOfRange, "reaches element"},
          {"offset_int64_max",
           [](const Device& d, Stream&) {
             Tensor(d.allocate(64), DType::f32, {1}, {1}, kInt64Max);
           },
           OutOfRange, "past the 16 elements of its storage"},
          {"offset_int64_max_and_a_second_element",
           [](const Device& d, Stream&) {
             Tensor(d.allocate(64), DType::f32, {2}, {1}, kInt64Max);
           },
           InvalidArgument, "furthest element overflows int64"},
          {"negative_size",
           [](const Device& d, Stream&) {
             empty({3, -1}, DType::f32, d);
           },
           InvalidArgument, "negative"},
          {"negative_stride",
           [](const Device& d, Stream&) { Tensor(d.allocate(64), DType::f32, {2}, {-1}); },
           InvalidArgument, "negative"},
          {"negative_offset",
           [](const Device& d, Stream&) { Tensor(d.allocate(64), DType::f32, {2}, {}, -1); },
           InvalidArgument, "negative"},
          {"view_of_an_empty_buffer",
           [](const Device&, Stream&) { Tensor(Buffer(), DType::f32, {2}); }, InvalidArgument,
           "no storage"},
          {"empty_on_an_empty_device",
           [](const Device&, Stream&) { empty({2}, DType::f32, Device()); }, InvalidArgument,
           "default-constructed"},
          {"arange_of_1e30_elements",
           [](const Device&, Stream& s) { arange(0, 1e30, 1, DType::f32, s); }, InvalidArgument,
           "more than int64 can count"},
          {"arange_with_step_0", [](const Device&, Stream& s) { arange(0, 4, 0, DType::f32, s); },
           InvalidArgument, "step"},
          {"arange_to_nan", [nan](const Device&, Stream& s) { arange(0, nan, 1, DType::f32, s); },
           InvalidArgument, "nan"},
          {"empty_of_dtype_99",
           [](const Device& d, Stream&) {
             empty({2, 3}, static_cast<DType>(99), d);
           },
           InvalidArgument, "dtype 99 is not one of hal's dtypes"},
          {"uniform_of_dtype_99",
           [](const Device&, Stream& s) { uniform({2}, static_cast<DType>(99), 1, s); },
           InvalidArgument, "dtype 99"},
          {"uniform_of_i32", [](const Device&, Stream& s) { uniform({2}, DType::i32, 1, s); },
           Unsupported, "i32"},
          {"slice_from_int64_min_to_int64_max_by_int64_max",
           [](const Device& d, Stream&) {
             const Tensor t =
                 empty({8, 3}, DType::f32, d).slice(0, kInt64Min, kInt64Max, kInt64Max);
             require(t.shape() == Shape{1, 3} && t.offset() == 0, "one row, the first");
           },
           Ok, ""},
          {"slice_with_step_0",
           [](const Device& d, Stream&) { empty({8}, DType::f32, d).slice(0, 0, 8, 0); },
           InvalidArgument, "step"},
          {"slice_with_step_int64_min",
           [](const Device& d, Stream&) { empty({8}, DType::f32, d).slice(0, 0, 8, kInt64Min); },
           InvalidArgument, "step"},
          {"slice_of_dim_int64_min",
           [](const Device& d, Stream&) { empty({8}, DType::f32, d).slice(kInt64Min, 0, 8); },
           InvalidArgument, "dim"},
          {"reshape_with_two_minus_ones",
           [](const Device& d, Stream&) {
             empty({4, 4}, DType::f32, d).reshape({-1, -1});
           },
           InvalidArgument, "-1"},
          {"reshape_to_another_count",
           [](const Device& d, Stream&) {
             empty({4, 4}, DType::f32, d).reshape({7});
           },
           InvalidArgument, "reshape"},
          {"permute_repeating_a_dim",
           [](const Device& d, Stream&) {
             empty({2, 3}, DType::f32, d).permute({0, 0});
           },
           InvalidArgument, "permute"},
          {"transpose_of_dim_int64_max",
           [](const Device& d, Stream&) {
             empty({2, 3}, DType::f32, d).transpose(0, kInt64Max);
           },
           InvalidArgument, "transpose"},
          {"unsqueeze_at_int64_min",
           [](const Device& d, Stream&) {
             empty({2, 3}, DType::f32, d).unsqueeze(kInt64Min);
           },
           InvalidArgument, "unsqueeze"},
          {"expand_a_size_2_dim_to_3",
           [](const Device& d, Stream&) { empty({2}, DType::f32, d).expand({3}); }, InvalidArgument,
           "expand"},
          {"from_host_of_a_null_pointer",
           [](const Device&, Stream& s) { from_host(nullptr, {4}, DType::f32, s); },
           InvalidArgument, "null"},
          {"to_vector_as_another_type",
           [](const Device&, Stream& s) { zeros({2}, DType::f32, s).to_vector<double>(s); },
           InvalidArgument, "f64"},
          with_another_device({"contiguous_on_a_stream_of_another_device",
                               [](const Device& d, Stream& s) {
                                 const Tensor t = zeros({2, 3}, DType::f32, s).transpose(0, 1);
                                 s.synchronize();
                                 Stream elsewhere = another_device(d).create_stream();
                                 t.contiguous(elsewhere);
                               },
                               InvalidArgument, "stream"}),
      }};
}

}  // namespace hal::test::bad_input
