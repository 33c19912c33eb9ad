// A pre-norm transformer block: multi-head self-attention and an MLP, each a residual branch.
#include <cmath>
#include <limits>

#include "hal/error.hpp"
#include "hal/nn.hpp"

namespace hal::nn {

TransformerBlock::TransformerBlock(const TransformerBlockOptions& options, uint64_t seed,
                                   Stream& stream)
    : options_(options) {
  if (options.dim <= 0 || options.heads <= 0 || options.dim % options.heads != 0 ||
      options.hidden <= 0)
    throw Error(ErrorCode::InvalidArgument,
                "TransformerBlock: dim " + std::to_string(options.dim) + " must be a positive " +
                    "multiple of heads " + std::to_string(options.heads) + ", hidden positive");
  const int64_t d = options.dim;
  ln1_ = register_module("ln1", std::make_shared<LayerNorm>(Shape{d}, 1e-5, stream));
  query_ = register_module("query", std::make_shared<Linear>(d, d, true, seed + 1, stream));
  key_ = register_module("key", std::make_shared<Linear>(d, d, true, seed + 2, stream));
  value_ = register_module("value", std::make_shared<Linear>(d, d, true, seed + 3, stream));
  out_ = register_module("out", std::make_shared<Linear>(d, d, true, seed + 4, stream));
  ln2_ = register_module("ln2", std::make_shared<LayerNorm>(Shape{d}, 1e-5, stream));
  up_ = register_module("up", std::make_shared<Linear>(d, options.hidden, true, seed + 5, stream));
  down_ =
      register_module("down", std::make_shared<Linear>(options.hidden, d, true, seed + 6, stream));
  drop1_ = register_module("drop1", std::make_shared<Dropout>(options.dropout, seed + 7));
  drop2_ = register_module("drop2", std::make_shared<Dropout>(options.dropout, seed + 8));
}

// softmax(q k^T / sqrt(head_dim) + mask) v per head, the heads joined and projected.
Tensor TransformerBlock::attention(const Tensor& x, Stream& s) {
  if (x.dim() != 3 || x.size(2) != options_.dim)
    throw Error(ErrorCode::InvalidArgument, "TransformerBlock of " + x.describe() +
                                                ": expects [batch, sequence, " +
                                                std::to_string(options_.dim) + "]");
  const int64_t batch = x.size(0), length = x.size(1), heads = options_.heads;
  const int64_t head_dim = options_.dim / heads;
  // [B, T, D] -> [B, H, T, Dh]
  const auto split = [&](const Tensor& t) {
    return t.reshape({batch, length, heads, head_dim}).permute({0, 2, 1, 3});
  };
  const Tensor q = split(query_->forward(x, s)), k = split(key_->forward(x, s));
  const Tensor v = split(value_->forward(x, s));
  Tensor scores = mul(matmul(q, k.transpose(2, 3), s),
                      full({}, 1.0 / std::sqrt(static_cast<double>(head_dim)), x.dtype(), s), s);
  if (options_.causal) {
    // -inf above the diagonal: a position sees itself and those before it.
    const Tensor rows = arange(length, DType::i64, s).reshape({length, 1});
    const Tensor cols = arange(length, DType::i64, s).reshape({1, length});
    const Tensor mask =
        where(gt(cols, rows, s), full({}, -std::numeric_limits<double>::infinity(), x.dtype(), s),
              full({}, 0.0, x.dtype(), s), s);
    scores = add(scores, mask, s);
  }
  const Tensor mixed = matmul(softmax(scores, -1, s), v, s);  // [B, H, T, Dh]
  const Tensor joined =
      mixed.permute({0, 2, 1, 3}).contiguous(s).reshape({batch, length, options_.dim});
  return out_->forward(joined, s);
}

Tensor TransformerBlock::forward(const Tensor& x, Stream& s) {
  const Tensor h = add(x, drop1_->forward(attention(ln1_->forward(x, s), s), s), s);
  const Tensor mlp = down_->forward(up_->forward(ln2_->forward(h, s), "gelu", s), s);
  return add(h, drop2_->forward(mlp, s), s);
}

}  // namespace hal::nn
