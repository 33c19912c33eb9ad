// Kernels of the layer ops (concat, embedding, cross_entropy, dropout, pooling) that the op table
// registers: the CPU's host kernels (host_nn.cpp) and concat by device copies for every device
// (concat.cpp). Inputs arrive contiguous, in the dtype the table planned; `out` is contiguous.
#pragma once

#include <vector>

#include "hal/tensor.hpp"
#include "ops/window.hpp"

namespace hal::ops {

// Any dtype: bytes moved.
void host_concat(const std::vector<Tensor>& parts, int64_t axis, const Tensor& out, Stream& stream);
// Every device: each part moved to the front of a permuted result by a device copy.
void copied_concat(const std::vector<Tensor>& parts, int64_t axis, const Tensor& out,
                   Stream& stream);

// f32, f64 (embedding: any floating dtype; bytes moved). indices i32 or i64. An index out of
// range throws when the kernel runs (AsyncFailure at synchronize), naming the op and the index.
void host_embedding(const Tensor& weight, const Tensor& indices, const Tensor& out, Stream& stream);
void host_embedding_backward(const Tensor& grad, const Tensor& indices, const Tensor& out,
                             Stream& stream);

// f32, f64: logits [N, C], targets [N] i32 or i64, out 0-d.
void host_cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& out,
                        int64_t ignore_index, double label_smoothing, Stream& stream);

// f32, f64: grad 0-d, out [N, C].
void host_cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& grad,
                                 const Tensor& out, int64_t ignore_index, double label_smoothing,
                                 Stream& stream);

// f32, f64.
void host_dropout(const Tensor& x, const Tensor& out, double p, uint64_t seed, Stream& stream);

// f32, f64: x [N, C, D...] with 1 to 3 spatial dimensions.
void host_pool(bool max, const Tensor& x, const Tensor& out, const Window& window,
               bool count_include_pad, Stream& stream);

}  // namespace hal::ops
