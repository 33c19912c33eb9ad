// tensor.*: tensors on the device: creation in every dtype, host data in and out, read-back of
// strided views, packing views (contiguous) and copies to every other device, checked against
// values computed on the host.
#include <numeric>

#include "values.hpp"

namespace hal::cts {
namespace {

// 0, 1, 2, ... as float.
std::vector<float> iota_f32(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

// Row-major element order of a view, computed on the host from shape, strides and offset.
std::vector<double> reference_gather(const Tensor& view) {
  std::vector<double> out;
  std::vector<int64_t> index(view.shape().size(), 0);
  for (int64_t n = view.numel(); n > 0; --n) {
    int64_t at = view.offset();
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * view.strides()[d];
    out.push_back(static_cast<double>(at));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < view.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// tensor.contiguous.<dtype>: element i holds i, so every gathered value names its source.
void contiguous_gathers(const Device& d, DType dtype) {
  Stream stream = d.create_stream();
  const Tensor base = arange(0.0, 128.0, 1.0, dtype, stream);
  const Tensor four_d = base.slice(0, 0, 120).reshape({2, 3, 4, 5});
  const Tensor seven_d = base.reshape({2, 2, 2, 2, 2, 2, 2}).permute({6, 5, 4, 3, 2, 1, 0});
  for (const Tensor& view :
       {four_d.transpose(0, 3), four_d.slice(1, 0, 3, 2).slice(3, 1, 5, 3),
        four_d.slice(2, 1, 2).expand({2, 3, 6, 5}), four_d.permute({2, 0, 3, 1}), seven_d}) {
    const std::string what = view.describe() + " with strides " + to_string(view.strides());
    check(!view.is_contiguous(), what + " is contiguous");
    const Tensor packed = view.contiguous(stream);
    check(packed.is_contiguous(), what + ": contiguous() is not");
    check(packed.shape() == view.shape(), what + ": shape " + to_string(packed.shape()));
    check(packed.storage().impl() != view.storage().impl(), what + ": no copy was made");
    check(numbers(packed, stream) == reference_gather(view), what + ": the values");
  }
}

}  // namespace

void add_tensor_cases(Cases& cases) {
  cases.push_back({"tensor.full.every_dtype", [](const Device& d) {
                     Stream stream = d.create_stream();
                     const Shape shape{3, 5};
                     check(full(shape, 2.5, DType::f32, stream).to_vector<float>(stream) ==
                               std::vector<float>(15, 2.5f),
                           "f32");
                     check(full(shape, -7, DType::i64, stream).to_vector<int64_t>(stream) ==
                               std::vector<int64_t>(15, -7),
                           "i64");
                     check(ones(shape, DType::i32, stream).to_vector<int32_t>(stream) ==
                               std::vector<int32_t>(15, 1),
                           "ones i32");
                     check(zeros(shape, DType::u8, stream).to_vector<uint8_t>(stream) ==
                               std::vector<uint8_t>(15, 0),
                           "zeros u8");
                     check(full(shape, -3, DType::i8, stream).to_vector<int8_t>(stream) ==
                               std::vector<int8_t>(15, -3),
                           "i8");
                     check(full(shape, 1, DType::boolean, stream).to_vector<uint8_t>(stream) ==
                               std::vector<uint8_t>(15, 1),
                           "bool");
                     // The bits of 0.1 rounded to nearest even, and of 1.0.
                     check(full(shape, 0.1, DType::f16, stream).to_vector<uint16_t>(stream) ==
                               std::vector<uint16_t>(15, 0x2e66),
                           "f16");
                     check(full(shape, 1.0, DType::bf16, stream).to_vector<uint16_t>(stream) ==
                               std::vector<uint16_t>(15, 0x3f80),
                           "bf16");
                     if (d.info().has_feature(feature::kFp64) || d.info().backend() == "cpu")
                       check(full(shape, 0.1, DType::f64, stream).to_vector<double>(stream) ==
                                 std::vector<double>(15, 0.1),
                             "f64");
                   }});
  cases.push_back({"tensor.arange_counts_like_numpy", [](const Device& d) {
                     Stream stream = d.create_stream();
                     check(arange(5, DType::i64, stream).to_vector<int64_t>(stream) ==
                               std::vector<int64_t>{0, 1, 2, 3, 4},
                           "arange(5)");
                     check(arange(1.0, 2.0, 0.25, DType::f32, stream).to_vector<float>(stream) ==
                               std::vector<float>{1.0f, 1.25f, 1.5f, 1.75f},
                           "arange(1, 2, 0.25)");
                     check(arange(3.0, -3.0, -2.0, DType::i32, stream).to_vector<int32_t>(stream) ==
                               std::vector<int32_t>{3, 1, -1},
                           "arange(3, -3, -2)");
                     check(arange(0.0, 0.0, 1.0, DType::f32, stream).numel() == 0,
                           "arange(0, 0, 1) is empty");
                   }});
  cases.push_back({"tensor.host_data_round_trips", [](const Device& d) {
                     Stream stream = d.create_stream();
                     Tensor t;
                     {
                       const std::vector<float> values = iota_f32(24);
                       t = from_vector(values, {2, 3, 4}, stream);
                     }  // `values` is gone before the copy has surely run
                     check(t.to_vector<float>(stream) == iota_f32(24),
                           "the values read back differ");
                   }});
  cases.push_back({"tensor.strided_views_read_back_in_row_major_order", [](const Device& d) {
                     Stream stream = d.create_stream();
                     const Tensor t = from_vector(iota_f32(24), {2, 3, 4}, stream);
                     // transpose(0, 2): out[i][j][k] = in[k][j][i]
                     std::vector<float> want;
                     for (int i = 0; i < 4; ++i)
                       for (int j = 0; j < 3; ++j)
                         for (int k = 0; k < 2; ++k)
                           want.push_back(static_cast<float>(k * 12 + j * 4 + i));
                     check(t.transpose(0, 2).to_vector<float>(stream) == want, "a transpose");
                     check(t.slice(0, 1, 2).slice(2, 1, 4, 2).to_vector<float>(stream) ==
                               std::vector<float>{13, 15, 17, 19, 21, 23},
                           "every other column of the second block");
                     const Tensor row = from_vector(std::vector<int32_t>{7, 8, 9}, {1, 3}, stream);
                     check(row.expand({2, 3}).to_vector<int32_t>(stream) ==
                               std::vector<int32_t>{7, 8, 9, 7, 8, 9},
                           "a broadcast row");
                     check(t.slice(1, 2, 2).to_vector<float>(stream).empty(), "an empty slice");
                   }});
  cases.push_back(
      {"tensor.copies_to_every_other_device", [](const Device& d) {
         Stream stream = d.create_stream();
         const Tensor source = from_vector(iota_f32(1000), {10, 100}, stream).slice(0, 2, 7);
         const Tensor small = from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3}, stream);
         std::vector<float> want(500);
         std::iota(want.begin(), want.end(), 200.0f);
         for (const Device& other : devices()) {
           const std::string what = d.id() + " -> " + other.id();
           Stream there = other.create_stream();
           const Tensor copy = source.to(other, stream);
           check(copy.device() == other, what + ": the copy is elsewhere");
           check(copy.shape() == Shape{5, 100}, what + ": shape");
           stream.synchronize();  // the copy was enqueued on this device's stream
           check(copy.to_vector<float>(there) == want, what + ": the values");
           // A transposed view is packed on its own device, then copied.
           const Tensor packed = small.transpose(0, 1).to(other, stream);
           stream.synchronize();
           check(packed.to_vector<int32_t>(there) == std::vector<int32_t>{1, 4, 2, 5, 3, 6},
                 what + ": a transposed view");
         }
       }});
  for (DType dtype : {DType::u8, DType::f16, DType::i32, DType::i64})
    cases.push_back({"tensor.contiguous." + std::string(to_string(dtype)),
                     [dtype](const Device& d) { contiguous_gathers(d, dtype); }});
  cases.push_back({"tensor.contiguous_of_a_contiguous_tensor_is_itself", [](const Device& d) {
                     Stream stream = d.create_stream();
                     const Tensor t = zeros({4, 4}, DType::f32, stream);
                     check(t.contiguous(stream).storage().impl() == t.storage().impl(),
                           "contiguous() copied a contiguous tensor");
                   }});
}

}  // namespace hal::cts
