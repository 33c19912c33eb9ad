// Backward rules of the layer ops: embedding (rows added back), cross_entropy (softmax less the
// target distribution), dropout (the same mask on the gradient) and pooling (through its parts).
#include "autograd/record.hpp"
#include "autograd/through_parts.hpp"
#include "ops/window.hpp"

namespace hal::autograd {

Tensor record_embedding(const Tensor& weight, const Tensor& indices, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = embedding(weight, indices, s);
  }
  return attach("embedding", {&weight, &indices}, y, {{1, "indices"}},
                [indices = saved(indices), rows = weight.size(0)](const Tensor& dy, Stream& st) {
                  return std::vector<Tensor>{embedding_backward(dy, indices, rows, st), Tensor()};
                });
}

Tensor record_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                            double label_smoothing, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = cross_entropy(logits, targets, ignore_index, label_smoothing, s);
  }
  return attach("cross_entropy", {&logits, &targets}, y, {{0, "logits"}, {1, "targets"}},
                [logits = saved(logits), targets = saved(targets), ignore_index, label_smoothing](
                    const Tensor& dy, Stream& st) {
                  return std::vector<Tensor>{
                      cross_entropy_backward(logits, targets, cast(dy, logits.dtype(), st),
                                             ignore_index, label_smoothing, st),
                      Tensor()};
                });
}

Tensor record_dropout(const Tensor& x, double p, uint64_t seed, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = dropout(x, p, seed, s);
  }
  return attach("dropout", {&x}, y, [p, seed](const Tensor& dy, Stream& st) {
    return std::vector<Tensor>{dropout(dy, p, seed, st)};
  });
}

Tensor record_pool(bool max, const Tensor& x, const PoolOptions& options, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = max ? max_pool(x, options, s) : avg_pool(x, options, s);
  }
  const ops::Window window = ops::pool_window(max, x, options);
  // avg_pool's gradient does not depend on x's values; max_pool's follows the maxima.
  return attach(max ? "max_pool" : "avg_pool", {&x}, y,
                max ? std::vector<SavedSlot>{{0, "x"}} : std::vector<SavedSlot>{},
                [max, window, include = options.count_include_pad, x = saved(x)](const Tensor& dy,
                                                                                 Stream& st) {
                  return through_parts(
                      [&](const std::vector<Tensor>& in, Stream& inner) {
                        return max ? ops::max_pool_picking_from_views(in[0], window, inner)
                                   : ops::avg_pool_from_views(in[0], window, include, inner);
                      },
                      {x}, {true}, dy, st);
                });
}

}  // namespace hal::autograd
