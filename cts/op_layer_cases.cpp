// op.layers.*: the layer ops (concat, embedding and its backward, cross_entropy and its
// backward, dropout, max_pool, avg_pool) against plain loops on the host in double precision,
// wherever `hal ops` lists them (CPU fallback off), in f32 and f64 where the device has it.
#include <algorithm>
#include <cmath>
#include <limits>

#include "values.hpp"

namespace hal::cts {
namespace {

const std::vector<DType> kFloats{DType::f32, DType::f64};

double tolerance(DType dtype) { return dtype == DType::f64 ? 1e-12 : 2e-5; }

void check_close(const std::vector<double>& got, const std::vector<double>& want, DType dtype,
                 const std::string& what) {
  check(got.size() == want.size(), what + ": " + std::to_string(got.size()) + " elements, " +
                                       std::to_string(want.size()) + " expected");
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      check(std::isnan(got[i]), what + ": element " + std::to_string(i) + " is not NaN");
      continue;
    }
    check(std::fabs(got[i] - want[i]) <= tolerance(dtype) * std::max(1.0, std::fabs(want[i])),
          what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
              ", expected " + std::to_string(want[i]));
  }
}

// Along axis 1 of [2, *, 3] parts, one of them a strided view; along the last axis.
void concat_reference(const Device& d) {
  Stream s = d.create_stream();
  for_listed(d, {"concat"}, {DType::f32, DType::f64, DType::i32, DType::boolean}, [&](DType dtype) {
    const Tensor at = make(inputs(2 * 1 * 3, dtype, 1), {2, 1, 3}, dtype, s);
    const Tensor b_full = make(inputs(3 * 2 * 4, dtype, 2), {2, 3, 4}, dtype, s);
    // The values as stored (bool keeps only whether they are 0).
    const auto a = numbers(at, s), b = numbers(b_full, s);
    // b sliced to [2, 3, 3] along its last axis, then transposed: a strided view.
    const Tensor bt = b_full.slice(2, 1, 4).transpose(1, 2);
    const auto got = numbers(concat({at, bt, at}, 1, s), s);
    std::vector<double> want;
    for (int n = 0; n < 2; ++n) {
      for (int c = 0; c < 3; ++c) want.push_back(a[n * 3 + c]);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) want.push_back(b[(n * 3 + j) * 4 + 1 + i]);
      for (int c = 0; c < 3; ++c) want.push_back(a[n * 3 + c]);
    }
    check(got == want, "concat along axis 1 differs from the loop");
    // Along the last axis, rows of one and of two values (a stack in a new last dimension, as
    // complex parts are made; the CPU copies rows of 2 to 16 bytes as moves of their size).
    for (const int64_t width : {1, 2}) {
      const Tensor first = b_full.slice(2, 0, width);  // a view: rows 4 values apart
      const Tensor second = make(inputs(2 * 3 * width, dtype, 3), {2, 3, width}, dtype, s);
      const auto one = numbers(first.contiguous(s), s), two = numbers(second, s);
      const auto stacked = numbers(concat({first, second, first}, 2, s), s);
      std::vector<double> rows;
      for (int64_t r = 0; r < 6; ++r)
        for (const auto* part : {&one, &two, &one})
          for (int64_t k = 0; k < width; ++k) rows.push_back((*part)[r * width + k]);
      check(stacked == rows,
            "concat along the last axis, rows of " + std::to_string(width) + " values, differs");
    }
  });
}

std::string listed_values(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += std::to_string(v) + " ";
  return text;
}

void embedding_reference(const Device& d) {
  Stream s = d.create_stream();
  for_listed(d, {"embedding", "embedding_backward"}, kFloats, [&](DType dtype) {
    const auto w = inputs(5 * 3, dtype, 3);
    const std::vector<double> picks{4, 0, 2, 4, 1, 4};
    const Tensor table = make(w, {5, 3}, dtype, s);
    for (DType index : {DType::i32, DType::i64}) {
      const Tensor indices = make(picks, {2, 3}, index, s);
      std::vector<double> rows;
      for (double p : picks)
        for (int c = 0; c < 3; ++c) rows.push_back(w[static_cast<size_t>(p) * 3 + c]);
      check_close(numbers(embedding(table, indices, s), s), rows, dtype, "embedding");
      // The backward adds each row of the gradient into its index's row: 4 gets three.
      const auto g = inputs(6 * 3, dtype, 4);
      std::vector<double> sums(5 * 3, 0.0);
      for (size_t i = 0; i < picks.size(); ++i)
        for (int c = 0; c < 3; ++c) sums[static_cast<size_t>(picks[i]) * 3 + c] += g[i * 3 + c];
      check_close(numbers(embedding_backward(make(g, {2, 3, 3}, dtype, s), indices, 5, s), s), sums,
                  dtype, "embedding_backward");
    }
  });
  // Rows gathered as they are: an infinity or NaN in a row not picked changes nothing (the
  // one-hot product other devices used made every picked row NaN: 0 * inf).
  for_listed(d, {"embedding"}, kFloats, [&](DType dtype) {
    const double inf = INFINITY;
    const Tensor table = make({1, 2, inf, 4, NAN, 6, 7, -inf}, {4, 2}, dtype, s);
    const std::vector<double> got =
        numbers(embedding(table, make({0, 3, 0}, {3}, DType::i64, s), s), s);
    check(got == std::vector<double>{1, 2, 7, -inf, 1, 2},
          "embedding of rows 0, 3, 0 beside rows of inf and NaN: " + listed_values(got));
  });
}

// The backward's sums where indices repeat many times and out of order, over chains and gaps
// longer than one Vulkan shader's loops reach on lavapipe, and beside gradient rows of inf and
// NaN, which stay in their own rows (the one-hot product made other rows NaN).
void embedding_backward_sums(const Device& d) {
  Stream s = d.create_stream();
  for_listed(d, {"embedding_backward"}, kFloats, [&](DType dtype) {
    constexpr int kPositions = 300, kRows = 19, kDim = 4;  // rows 17 and 18 never picked
    std::vector<double> picks;
    for (int i = 0; i < kPositions; ++i) picks.push_back((i * 7 + i / 5) % 17);
    const auto g = inputs(kPositions * kDim, dtype, 6);
    std::vector<double> sums(kRows * kDim, 0.0);
    for (int i = 0; i < kPositions; ++i)
      for (int c = 0; c < kDim; ++c)
        sums[static_cast<size_t>(picks[i]) * kDim + c] += g[i * kDim + c];
    for (DType index : {DType::i32, DType::i64})
      check_close(numbers(embedding_backward(make(g, {kPositions, kDim}, dtype, s),
                                             make(picks, {kPositions}, index, s), kRows, s),
                          s),
                  sums, dtype, "embedding_backward of 300 positions over 17 rows");

    // 10 000 positions over 37 rows: the kernels' passes run over chunks of positions (4 096 on
    // OpenCL, CUDA and Vulkan), so chains of equal indices cross two chunk boundaries.
    constexpr int kMany = 10000, kManyRows = 37;
    std::vector<double> many_picks;
    for (int i = 0; i < kMany; ++i) many_picks.push_back((i * 7919 + i / 3) % kManyRows);
    const auto many_g = inputs(kMany * 2, dtype, 7);
    std::vector<double> many_sums(kManyRows * 2, 0.0);
    for (int i = 0; i < kMany; ++i)
      for (int c = 0; c < 2; ++c)
        many_sums[static_cast<size_t>(many_picks[i]) * 2 + c] += many_g[i * 2 + c];
    check_close(numbers(embedding_backward(make(many_g, {kMany, 2}, dtype, s),
                                           make(many_picks, {kMany}, DType::i64, s), kManyRows, s),
                        s),
                many_sums, dtype, "embedding_backward of 10 000 positions over 37 rows");

    // Index 1 at every position but the first and the last, which hold index 0: a chain of
    // over 2^21 positions and a pair 2^21 apart, past what lavapipe's 65535 loop rounds of 32
    // steps reach in one shader (the Vulkan passes run over chunks of positions).
    constexpr int64_t kLong = (int64_t{1} << 21) + 100000;
    std::vector<double> far(kLong, 1.0), steps(kLong, 0.25);
    far.front() = far.back() = 0;
    steps.front() = 1;
    steps.back() = 2;
    const std::vector<double> got =
        numbers(embedding_backward(make(steps, {kLong, 1}, dtype, s),
                                   make(far, {kLong}, DType::i64, s), 3, s),
                s);
    check(got == std::vector<double>{3, 0.25 * (kLong - 2), 0},
          "embedding_backward of 2197152 positions (index 0 first and last, 1 between) into 3 "
          "rows: " +
              listed_values(got));

    const double inf = INFINITY;
    const std::vector<double> rows =
        numbers(embedding_backward(make({1, 2, inf, 4, NAN, 6, 7, -inf}, {4, 2}, dtype, s),
                                   make({0, 3, 3, 1}, {4}, DType::i64, s), 5, s),
                s);
    const std::vector<double> want{1, 2, 7, -inf, 0, 0, NAN, 10, 0, 0};
    bool same = rows.size() == want.size();
    for (size_t i = 0; same && i < want.size(); ++i)
      same = std::isnan(want[i]) ? std::isnan(rows[i]) : rows[i] == want[i];
    check(same, "embedding_backward of rows holding inf and NaN into rows 0, 3, 3, 1: " +
                    listed_values(rows));
  });
}

// PyTorch's definition, row by row in double.
// cross_entropy and its backward of `rows` x `classes` logits against the loops in double, with
// and without an ignored class and label smoothing.
void check_cross_entropy(Stream& s, DType dtype, int rows, int classes,
                         const std::vector<double>& targets) {
  const auto x = inputs(static_cast<size_t>(rows * classes), dtype, 5, -4, 4);
  const Tensor logits = make(x, {rows, classes}, dtype, s);
  const Tensor t = make(targets, {rows}, DType::i64, s);
  const std::string shape = " of " + std::to_string(rows) + " x " + std::to_string(classes);
  for (const auto& [ignore, smoothing] : {std::pair{-100.0, 0.0}, std::pair{3.0, 0.25}}) {
    double total = 0;
    int counted = 0;
    std::vector<double> grad(x.size(), 0.0);
    std::vector<double> lse(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
      double top = -INFINITY, sum = 0, mean = 0;
      for (int c = 0; c < classes; ++c) top = std::max(top, x[r * classes + c]);
      for (int c = 0; c < classes; ++c) {
        sum += std::exp(x[r * classes + c] - top);
        mean += x[r * classes + c] / classes;
      }
      lse[r] = top + std::log(sum);
      if (targets[r] == ignore) continue;
      ++counted;
      const int target = static_cast<int>(targets[r]);
      total += (1 - smoothing) * (lse[r] - x[r * classes + target]) + smoothing * (lse[r] - mean);
    }
    const double dy = 1.5;
    for (int r = 0; r < rows; ++r) {
      if (targets[r] == ignore) continue;
      for (int c = 0; c < classes; ++c) {
        const double p = std::exp(x[r * classes + c] - lse[r]);
        const double wanted = (c == targets[r] ? 1 - smoothing : 0) + smoothing / classes;
        grad[r * classes + c] = (p - wanted) * dy / counted;
      }
    }
    const auto ignore_index = static_cast<int64_t>(ignore);
    check_close(numbers(cross_entropy(logits, t, ignore_index, smoothing, s), s), {total / counted},
                dtype, "cross_entropy" + shape);
    check_close(numbers(cross_entropy_backward(logits, t, make({dy}, {}, dtype, s), ignore_index,
                                               smoothing, s),
                        s),
                grad, dtype, "cross_entropy_backward" + shape);
  }
}

void cross_entropy_reference(const Device& d) {
  Stream s = d.create_stream();
  for_listed(d, {"cross_entropy", "cross_entropy_backward"}, kFloats, [&](DType dtype) {
    check_cross_entropy(s, dtype, 7, 5, {1, 3, 0, 3, 4, 2, 3});  // 3 is ignored in one pass
    // Rows wider than a vector, and enough of them for the CPU to split them across threads.
    std::vector<double> targets(1000);
    for (size_t r = 0; r < targets.size(); ++r) targets[r] = static_cast<double>(r * 7 % 37);
    check_cross_entropy(s, dtype, 1000, 37, targets);
    // One row of a large vocabulary: past the CPU pool's threshold in one row.
    check_cross_entropy(s, dtype, 1, 40000, {12345});
    // Classes masked with -inf, and an ignored (padding) row of nothing else: a finite loss and
    // gradient, as PyTorch gives (a product with a 0/1 mask made them NaN: 0 * inf).
    const double inf = INFINITY;
    const std::vector<double> masked{0, -inf, 1, 2, 0.5, -inf, -inf, -inf, -inf};
    const Tensor masked_logits = make(masked, {3, 3}, dtype, s);
    const Tensor masked_targets = make({0, 1, -100}, {3}, DType::i64, s);
    const double lse0 = std::log(std::exp(0.0) + std::exp(1.0));
    const double lse1 = std::log(std::exp(2.0) + std::exp(0.5));
    check_close(numbers(cross_entropy(masked_logits, masked_targets, -100, 0.0, s), s),
                {((lse0 - 0) + (lse1 - 0.5)) / 2}, dtype, "cross_entropy of masked classes");
    const std::vector<double> masked_grad{(std::exp(0 - lse0) - 1) / 2,
                                          0,
                                          std::exp(1 - lse0) / 2,
                                          std::exp(2 - lse1) / 2,
                                          (std::exp(0.5 - lse1) - 1) / 2,
                                          0,
                                          0,
                                          0,
                                          0};
    check_close(numbers(cross_entropy_backward(masked_logits, masked_targets,
                                               make({1.0}, {}, dtype, s), -100, 0.0, s),
                        s),
                masked_grad, dtype, "cross_entropy_backward of masked classes");
  });
}

// In f16 the loss sums its rows and counts them past f16's 65504 at ordinary batch sizes: the
// sum and count are f32's, the loss and gradient rounded once.
void cross_entropy_in_half(const Device& d) {
  Stream s = d.create_stream();
  for_listed(d, {"cross_entropy", "cross_entropy_backward"}, {DType::f16}, [&](DType dtype) {
    constexpr int64_t kRows = 8192, kBig = 70000;
    std::vector<double> x(kRows * 4, 0.0);
    for (int64_t r = 0; r < kRows; ++r) x[static_cast<size_t>(r * 4)] = 10;
    const Tensor targets = full({kRows}, 1, DType::i64, s);
    const double loss = 10 + std::log(1 + 3 * std::exp(-10.0));
    const double got =
        numbers(cross_entropy(make(x, {kRows, 4}, dtype, s), targets, -100, 0, s), s)[0];
    check(std::fabs(got - loss) <= 1e-2, "cross_entropy of f16[8192, 4] gave " +
                                             std::to_string(got) + ", " + std::to_string(loss) +
                                             " expected");
    // 70 000 rows of equal logits: log 4 each, and a gradient of (1/4 - [target]) / 70 000.
    const Tensor even = zeros({kBig, 4}, dtype, s);
    const Tensor big_targets = full({kBig}, 1, DType::i64, s);
    const double even_loss = numbers(cross_entropy(even, big_targets, -100, 0, s), s)[0];
    check(std::fabs(even_loss - std::log(4.0)) <= 1e-3,
          "cross_entropy of f16[70000, 4] gave " + std::to_string(even_loss));
    const std::vector<double> grad = numbers(
        cross_entropy_backward(even, big_targets, make({1.0}, {}, dtype, s), -100, 0, s), s);
    // f16 subnormals there: within a step of 2^-24.
    check(
        std::fabs(grad[0] - 0.25 / kBig) <= 0x1p-24 && std::fabs(grad[1] + 0.75 / kBig) <= 0x1p-24,
        "cross_entropy_backward of f16[70000, 4] gave " + std::to_string(grad[0]) + " and " +
            std::to_string(grad[1]));
  });
}

// The mask is Philox's uniform draw i >= p: hal::uniform's draws on cpu:0 (checked against the
// published vectors by hal's tests) are the reference.
void dropout_reference(const Device& d) {
  Stream s = d.create_stream();
  Stream on_cpu = device("cpu:0").create_stream();
  for_listed(d, {"dropout"}, kFloats, [&](DType dtype) {
    const Shape shape{9, 7};
    const auto x = inputs(63, dtype, 6);
    const auto draws = uniform(shape, DType::f32, 42, on_cpu).to_vector<float>(on_cpu);
    for (double p : {0.0, 0.3, 1.0}) {
      std::vector<double> want;
      for (size_t i = 0; i < x.size(); ++i)
        want.push_back(draws[i] >= static_cast<float>(p) ? rounded(x[i] * (1 / (1 - p)), dtype)
                                                         : 0.0);
      check_close(numbers(dropout(make(x, shape, dtype, s), p, 42, s), s), want, dtype,
                  "dropout with p " + std::to_string(p));
    }
    // x times the mask (PyTorch's): a dropped infinity is NaN on every device (the CPU gave 0).
    std::vector<double> infinite(x.size(), INFINITY);
    const std::vector<double> got =
        numbers(dropout(make(infinite, shape, dtype, s), 0.3, 42, s), s);
    for (size_t i = 0; i < got.size(); ++i)
      check(draws[i] >= 0.3f ? got[i] == INFINITY : std::isnan(got[i]),
            "dropout of inf at " + std::to_string(i) + " gives " + std::to_string(got[i]));
  });
}

PoolOptions pool_options(std::vector<int64_t> kernel, std::vector<int64_t> strides = {},
                         std::vector<int64_t> dilations = {}, std::vector<int64_t> before = {},
                         std::vector<int64_t> after = {}, bool ceil_mode = false,
                         bool count_include_pad = false) {
  PoolOptions o;
  o.kernel = std::move(kernel);
  o.strides = std::move(strides);
  o.dilations = std::move(dilations);
  o.pads_before = std::move(before);
  o.pads_after = std::move(after);
  o.ceil_mode = ceil_mode;
  o.count_include_pad = count_include_pad;
  return o;
}

// Windows over [N, C, H, W], padding excluded from max (and from avg unless counted).
std::vector<double> pool_reference(bool max, const std::vector<double>& x, const Shape& xs,
                                   const PoolOptions& o, Shape& ys) {
  const int64_t h = xs[2], w = xs[3];
  const auto dilation = [&](int i) { return o.dilations.empty() ? int64_t{1} : o.dilations[i]; };
  const auto size = [&](int i, int64_t in) {
    const int64_t room =
        in + o.pads_before[i] + o.pads_after[i] - dilation(i) * (o.kernel[i] - 1) - 1;
    int64_t out =
        (o.ceil_mode ? (room + o.strides[i] - 1) / o.strides[i] : room / o.strides[i]) + 1;
    if (o.ceil_mode && (out - 1) * o.strides[i] >= in + o.pads_before[i]) --out;
    return out;
  };
  const int64_t oh = size(0, h), ow = size(1, w);
  ys = {xs[0], xs[1], oh, ow};
  std::vector<double> y;
  for (int64_t plane = 0; plane < xs[0] * xs[1]; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -INFINITY, total = 0;
        int64_t valid = 0, covered_h = 0, covered_w = 0;
        for (int64_t a = 0; a < o.kernel[0]; ++a) {
          const int64_t r = i * o.strides[0] - o.pads_before[0] + a * dilation(0);
          covered_h += r < h + o.pads_after[0];
          for (int64_t b = 0; b < o.kernel[1]; ++b) {
            const int64_t c = j * o.strides[1] - o.pads_before[1] + b * dilation(1);
            if (a == 0) covered_w += c < w + o.pads_after[1];
            if (r < 0 || r >= h || c < 0 || c >= w) continue;
            const double v = x[static_cast<size_t>((plane * h + r) * w + c)];
            best = std::max(best, v);
            total += v;
            ++valid;
          }
        }
        y.push_back(
            max ? best
                : total / static_cast<double>(o.count_include_pad ? covered_h * covered_w : valid));
      }
  return y;
}

void pool_reference_case(const Device& d) {
  Stream s = d.create_stream();
  for_listed(d, {"max_pool", "avg_pool"}, kFloats, [&](DType dtype) {
    const Shape xs{2, 3, 7, 6};
    const auto x = inputs(static_cast<size_t>(numel(xs)), dtype, 8);
    const Tensor xt = make(x, xs, dtype, s);
    const PoolOptions plain = pool_options({2, 2}, {2, 2}, {}, {0, 0}, {0, 0});
    const PoolOptions padded = pool_options({3, 2}, {2, 1}, {}, {1, 0}, {1, 1}, true, true);
    const PoolOptions dilated = pool_options({2, 3}, {1, 2}, {2, 1}, {0, 1}, {1, 1});
    for (const PoolOptions* o : {&plain, &padded, &dilated}) {
      Shape ys;
      for (bool max : {true, false}) {
        if (!max && o == &dilated) continue;  // PyTorch's avg_pool has no dilation
        const auto want = pool_reference(max, x, xs, *o, ys);
        const Tensor y = max ? max_pool(xt, *o, s) : avg_pool(xt, *o, s);
        check(y.shape() == ys,
              "pool shape " + to_string(y.shape()) + ", expected " + to_string(ys));
        check_close(numbers(y, s), want, dtype, max ? "max_pool" : "avg_pool");
      }
    }
  });
}

// What the layer ops refuse, by code and message, wherever they run.
void layer_errors(const Device& d) {
  Stream s = d.create_stream();
  for_listed(
      d, {"concat", "cross_entropy", "embedding", "dropout", "max_pool"}, {DType::f32},
      [&](DType dtype) {
        const Tensor x = zeros({2, 3}, dtype, s);
        check_error([&] { concat({}, 0, s); }, ErrorCode::InvalidArgument, {"concat of no tensors"},
                    "concat of nothing");
        check_error(
            [&] {
              concat({x, zeros({3, 3}, dtype, s)}, 1, s);
            },
            ErrorCode::InvalidArgument, {"concat", "differ off the axis"},
            "concat of mismatched shapes");
        check_error(
            [&] {
              concat({x, zeros({2, 3}, DType::i32, s)}, 0, s);
            },
            ErrorCode::InvalidArgument, {"concat", "dtypes differ"}, "concat of two dtypes");
        check_error([&] { embedding(x, zeros({2}, DType::f32, s), s); }, ErrorCode::InvalidArgument,
                    {"embedding", "i32 or i64"}, "float indices");
        check_error(
            [&] {
              embedding(zeros({2, 3, 4}, dtype, s), zeros({2}, DType::i64, s), s);
            },
            ErrorCode::InvalidArgument, {"[num_embeddings, dim]"}, "weights that are not a matrix");
        check_error([&] { cross_entropy(x, zeros({3}, DType::i64, s), -100, 0, s); },
                    ErrorCode::InvalidArgument, {"cross_entropy", "[N, C]", "[N]"},
                    "targets of another length");
        check_error([&] { cross_entropy(x, zeros({2}, DType::i64, s), -100, 1.5, s); },
                    ErrorCode::InvalidArgument, {"label_smoothing 1.5"}, "smoothing above 1");
        check_error([&] { dropout(x, -0.1, 0, s); }, ErrorCode::InvalidArgument,
                    {"dropout", "p -0.1"}, "a negative p");
        check_error(
            [&] {
              max_pool(zeros({1, 1, 4, 4}, dtype, s), pool_options({2, 2}, {0, 1}), s);
            },
            ErrorCode::InvalidArgument, {"max_pool", "strides"}, "a zero stride");
        check_error(
            [&] {
              max_pool(zeros({1, 1, 4, 4}, dtype, s), pool_options({5, 5}), s);
            },
            ErrorCode::InvalidArgument, {"larger than the padded input"},
            "a window larger than the input");
        check_error([&] { max_pool(x, pool_options({2}), s); }, ErrorCode::InvalidArgument,
                    {"max_pool", "[N, C, D1]"}, "a 2-d input");
      });
}

}  // namespace

void add_op_layer_cases(Cases& cases) {
  cases.push_back({"op.layers.concat", concat_reference});
  cases.push_back({"op.layers.embedding", embedding_reference});
  cases.push_back({"op.layers.embedding_backward_sums", embedding_backward_sums});
  cases.push_back({"op.layers.cross_entropy", cross_entropy_reference});
  cases.push_back({"op.layers.cross_entropy_f16", cross_entropy_in_half});
  cases.push_back({"op.layers.dropout", dropout_reference});
  cases.push_back({"op.layers.pooling", pool_reference_case});
  cases.push_back({"op.layers.errors", layer_errors});
}

}  // namespace hal::cts
