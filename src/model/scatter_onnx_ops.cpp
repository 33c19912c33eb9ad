// ONNX's scatter and gather-by-tuple ops, TopK, ReverseSequence, Unique and NonMaxSuppression.
// Indices are read to the host (they are small) and checked there; the data moves on the device:
// gathers are take(), scatters device copies of rows into a copy of the data (add/mul/max/min for
// reductions), TopK one max/min, eq and argmax round per element. Unique and NonMaxSuppression,
// whose output sizes depend on the values, compute on the host.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

Tensor ints_tensor(const std::vector<int64_t>& values, const Shape& shape, Stream& s) {
  return from_host(values.data(), shape, DType::i64, s);
}

// One row of the updates written over one row of the data, both counted in rows.
struct Write {
  int64_t target;
  int64_t source;
};

// `index` in [-extent, extent) counted from 0; InvalidArgument naming it and the axis otherwise.
int64_t wrapped(const OpContext& ctx, int64_t index, int64_t axis, int64_t extent) {
  if (index < -extent || index >= extent)
    ctx.invalid("index " + std::to_string(index) + " is out of range for axis " +
                std::to_string(axis) + " of size " + std::to_string(extent));
  return index < 0 ? index + extent : index;
}

// Row-major element strides of `shape`.
std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// A copy of `x` in storage of its own, contiguous, for the scatters to write into.
Tensor fresh_copy(const Tensor& x, Stream& s) {
  const Tensor source = x.contiguous(s);
  const Tensor copy = empty(x.shape(), x.dtype(), s.device());
  if (copy.nbytes() > 0)
    s.copy(copy.storage(), source.storage(), copy.nbytes(), 0,
           static_cast<size_t>(source.offset()) * source.element_size());
  return copy;
}

// Rows of `source` copied over rows of `target` (both contiguous, `block` elements a row), runs
// of consecutive rows in both merged into one copy.
void place_rows(Stream& s, const Tensor& target, const Tensor& source,
                const std::vector<Write>& writes, int64_t block) {
  const auto row = static_cast<size_t>(block) * target.element_size();
  const auto target_base = static_cast<size_t>(target.offset()) * target.element_size();
  const auto source_base = static_cast<size_t>(source.offset()) * source.element_size();
  for (size_t i = 0; i < writes.size() && row > 0;) {
    size_t run = 1;
    while (i + run < writes.size() &&
           writes[i + run].target == writes[i].target + static_cast<int64_t>(run) &&
           writes[i + run].source == writes[i].source + static_cast<int64_t>(run))
      ++run;
    s.copy(target.storage(), source.storage(), run * row,
           target_base + static_cast<size_t>(writes[i].target) * row,
           source_base + static_cast<size_t>(writes[i].source) * row);
    i += run;
  }
}

// The reduction attribute (opset 16 on); none, add, mul, max or min.
std::string reduction_of(const OpContext& ctx) {
  const std::string reduction = ctx.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    ctx.invalid("reduction '" + reduction + "' (none, add, mul, max or min)");
  return reduction;
}

Tensor reduce(const std::string& reduction, const Tensor& a, const Tensor& b, Stream& s) {
  if (reduction == "add") return add(a, b, s);
  if (reduction == "mul") return mul(a, b, s);
  if (reduction == "max") return maximum(a, b, s);
  return minimum(a, b, s);
}

// `data` seen as rows of `block` elements with the rows of `updates` written over them in order:
// without a reduction the last write to a row wins; with one, each round combines every row
// with at most one of its updates, in the order they come.
Tensor scatter_rows(const OpContext& ctx, const Tensor& data, const Tensor& updates, int64_t block,
                    const std::vector<Write>& writes, const std::string& reduction) {
  Stream& s = ctx.stream();
  const Tensor out = fresh_copy(data, s);
  if (block == 0 || writes.empty()) return out;
  const Tensor rows = out.reshape({out.numel() / block, block});
  const Tensor sources = updates.contiguous(s).reshape({updates.numel() / block, block});
  std::map<int64_t, int64_t> seen;  // writes so far to each target row
  if (reduction == "none") {
    std::vector<Write> last;
    for (size_t i = writes.size(); i-- > 0;)
      if (seen[writes[i].target]++ == 0) last.push_back(writes[i]);
    place_rows(s, rows, sources, {last.rbegin(), last.rend()}, block);
    return out;
  }
  std::vector<std::vector<Write>> rounds;
  for (const Write& write : writes) {
    const auto round = static_cast<size_t>(seen[write.target]++);
    if (round == rounds.size()) rounds.emplace_back();
    rounds[round].push_back(write);
  }
  for (const std::vector<Write>& round : rounds) {
    std::vector<int64_t> targets, picked;
    std::vector<Write> combined_back;
    for (const Write& write : round) {
      combined_back.push_back({write.target, static_cast<int64_t>(targets.size())});
      targets.push_back(write.target);
      picked.push_back(write.source);
    }
    const Tensor combined =
        reduce(reduction, take(ctx, rows, 0, targets), take(ctx, sources, 0, picked), s);
    place_rows(s, rows, combined, combined_back, block);
  }
  return out;
}

// The updates are copied into data's rows as bytes: of another dtype they would be read as
// data's (ONNX's checker does not compare the two).
void check_updates_dtype(const OpContext& ctx, const Tensor& data, const Tensor& updates) {
  if (updates.dtype() != data.dtype())
    ctx.invalid("updates of " + std::string(to_string(updates.dtype())) + " for data of " +
                std::string(to_string(data.dtype())) + ": they must have one dtype");
}

// ScatterElements (and Scatter before it): updates[p] written over data at p with its
// coordinate along the axis replaced by indices[p]; each a row of one element.
Outputs scatter_elements(const OpContext& ctx, const Inputs& in) {
  const Tensor& data = in.at(0);
  const Tensor& indices = in.at(1);
  const Tensor& updates = in.at(2);
  check_updates_dtype(ctx, data, updates);
  if (indices.dim() != data.dim() || updates.shape() != indices.shape())
    ctx.invalid("indices " + to_string(indices.shape()) + " and updates " +
                to_string(updates.shape()) + " must have one shape of the rank of data " +
                to_string(data.shape()));
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), data.dim());
  for (int64_t d = 0; d < data.dim(); ++d)
    if (d != axis && indices.size(d) > data.size(d))
      ctx.invalid("indices " + to_string(indices.shape()) + " exceed data " +
                  to_string(data.shape()) + " in dimension " + std::to_string(d));
  const std::string reduction = reduction_of(ctx);
  const std::vector<int64_t> picks = ctx.read_ints(indices);
  const std::vector<int64_t> data_strides = strides_of(data.shape());
  const std::vector<int64_t> index_strides = strides_of(indices.shape());
  std::vector<Write> writes;
  for (size_t p = 0; p < picks.size(); ++p) {
    int64_t target = 0;
    for (size_t d = 0; d < index_strides.size(); ++d) {
      int64_t coordinate = static_cast<int64_t>(p) / index_strides[d] % indices.size(d);
      if (static_cast<int64_t>(d) == axis)
        coordinate = wrapped(ctx, picks[p], axis, data.size(axis));
      target += coordinate * data_strides[d];
    }
    writes.push_back({target, static_cast<int64_t>(p)});
  }
  return {scatter_rows(ctx, data, updates, 1, writes, reduction)};
}

// ScatterND: each index tuple (the last dimension of indices) names a slice of data, written
// over by the matching slice of updates; each slice a row.
Outputs scatter_nd(const OpContext& ctx, const Inputs& in) {
  const Tensor& data = in.at(0);
  const Tensor& indices = in.at(1);
  const Tensor& updates = in.at(2);
  check_updates_dtype(ctx, data, updates);
  if (indices.dim() == 0 || indices.size(-1) > data.dim())
    ctx.invalid("indices " + to_string(indices.shape()) + " must end in tuples of at most " +
                std::to_string(data.dim()) + " coordinates");
  const int64_t k = indices.size(-1);
  Shape expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != expected)
    ctx.invalid("updates " + to_string(updates.shape()) + " must have shape " +
                to_string(expected) + " for indices " + to_string(indices.shape()) + " and data " +
                to_string(data.shape()));
  const std::vector<int64_t> tuples = ctx.read_ints(indices);
  const std::vector<int64_t> row_strides =
      strides_of(Shape(data.shape().begin(), data.shape().begin() + k));
  const int64_t count = numel(Shape(indices.shape().begin(), indices.shape().end() - 1));
  std::vector<Write> writes;
  for (int64_t m = 0; m < count; ++m) {
    int64_t target = 0;
    for (int64_t j = 0; j < k; ++j)
      target += wrapped(ctx, tuples[static_cast<size_t>(m * k + j)], j, data.size(j)) *
                row_strides[static_cast<size_t>(j)];
    writes.push_back({target, m});
  }
  const int64_t block = numel(Shape(data.shape().begin() + k, data.shape().end()));
  return {scatter_rows(ctx, data, updates, block, writes, reduction_of(ctx))};
}

// GatherND: the slice of data each index tuple names, the first batch_dims dimensions of
// indices and data walked together; data seen as rows, gathered by take().
Outputs gather_nd(const OpContext& ctx, const Inputs& in) {
  const Tensor& data = in.at(0);
  const Tensor& indices = in.at(1);
  const int64_t batch_dims = ctx.attr_int("batch_dims", 0);
  if (indices.dim() == 0 || batch_dims < 0 || batch_dims >= std::min(indices.dim(), data.dim()))
    ctx.invalid("batch_dims " + std::to_string(batch_dims) + " must be below the ranks of data " +
                to_string(data.shape()) + " and indices " + to_string(indices.shape()));
  const int64_t k = indices.size(-1);
  if (batch_dims + k > data.dim())
    ctx.invalid("index tuples of " + std::to_string(k) + " coordinates after " +
                std::to_string(batch_dims) + " batch dimensions exceed data " +
                to_string(data.shape()));
  for (int64_t d = 0; d < batch_dims; ++d)
    if (indices.size(d) != data.size(d))
      ctx.invalid("indices " + to_string(indices.shape()) + " and data " + to_string(data.shape()) +
                  " differ in batch dimension " + std::to_string(d));
  const Shape& shape = data.shape();
  const int64_t batches = numel(Shape(shape.begin(), shape.begin() + batch_dims));
  const int64_t rows_per_batch =
      numel(Shape(shape.begin() + batch_dims, shape.begin() + batch_dims + k));
  const Shape row_shape(shape.begin() + batch_dims + k, shape.end());
  const Shape tuple_shape(indices.shape().begin(), indices.shape().end() - 1);
  const int64_t tuple_count = numel(tuple_shape);
  const int64_t tuples_per_batch = batches == 0 ? 0 : tuple_count / batches;
  const std::vector<int64_t> coordinates = ctx.read_ints(indices);
  const std::vector<int64_t> row_strides =
      strides_of(Shape(shape.begin() + batch_dims, shape.begin() + batch_dims + k));
  std::vector<int64_t> picks;
  for (int64_t t = 0; t < tuple_count; ++t) {
    int64_t row = t / tuples_per_batch * rows_per_batch;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t axis = batch_dims + j;
      row += wrapped(ctx, coordinates[static_cast<size_t>(t * k + j)], axis, data.size(axis)) *
             row_strides[static_cast<size_t>(j)];
    }
    picks.push_back(row);
  }
  Shape rows_shape{batches * rows_per_batch};
  rows_shape.insert(rows_shape.end(), row_shape.begin(), row_shape.end());
  Shape out_shape = tuple_shape;
  out_shape.insert(out_shape.end(), row_shape.begin(), row_shape.end());
  const Tensor rows = data.contiguous(ctx.stream()).reshape(rows_shape);
  return {take(ctx, rows, 0, picks).reshape(out_shape)};
}

// TopK: k rounds, each taking the extreme of the elements not yet taken and, of the elements
// equal to it, the first not yet taken (ONNX's lower index first for ties). NaN ranks above
// everything, as in ONNX's reference (np.sort puts it last) and PyTorch: first of the largest,
// as hal's max ranks it, and last of the smallest, where hal's min would rank it first, so
// there the least number left is taken, and NaN only once none is.
Outputs top_k(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  if (x.dtype() == DType::boolean) ctx.unsupported("bool inputs");
  const int64_t axis = ctx.axis(ctx.attr_int("axis", -1), x.dim());
  const int64_t extent = x.size(axis);
  int64_t k = 0;
  if (ctx.opset() < 10) {
    k = ctx.attr_int("k", -1);
  } else {
    const std::vector<int64_t> given_k = ctx.read_ints(in.at(1));
    if (given_k.size() != 1) ctx.invalid("K must hold one value, got " + to_string(given_k));
    k = given_k[0];
  }
  if (k < 0 || k > extent)
    ctx.invalid("k " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) +
                " of size " + std::to_string(extent));
  const bool largest = ctx.attr_int("largest", 1) != 0;
  if (k == 0) {
    Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = 0;
    return {x.slice(axis, 0, 0).contiguous(s), full(shape, 0, DType::i64, s)};
  }
  Shape positions_shape(static_cast<size_t>(x.dim()), 1);
  positions_shape[static_cast<size_t>(axis)] = extent;
  const Tensor positions = arange(extent, DType::i64, s).reshape(positions_shape);
  // A value no element ranks below (largest) or above (smallest).
  const Tensor out_of_reach = bound_of(x.dtype(), !largest, s);
  const Tensor no = full({}, 0, DType::boolean, s);
  const Tensor yes = full({}, 1, DType::boolean, s);
  const bool floating = is_floating(x.dtype());
  const bool nan_last = floating && !largest;
  const Tensor is_nan = floating ? ne(x, x, s) : Tensor();
  const Tensor numbers = nan_last ? where(is_nan, out_of_reach, x, s) : x;
  std::vector<Tensor> values, indices;
  Tensor taken;
  for (int64_t round = 0; round < k; ++round) {
    const Tensor left = taken.defined() ? where(taken, out_of_reach, numbers, s) : numbers;
    Tensor extreme = largest ? max(left, {axis}, true, s) : min(left, {axis}, true, s);
    Tensor equal = eq(x, extreme, s);
    if (floating && largest) equal = where(ne(extreme, extreme, s), is_nan, equal, s);
    if (taken.defined()) equal = where(taken, no, equal, s);
    if (nan_last) {  // no number left where none equals the least: the NaN left
      const Tensor found =
          gt(max(cast(equal, DType::i32, s), {axis}, true, s), full({}, 0, DType::i32, s), s);
      const Tensor nan_left = taken.defined() ? where(taken, no, is_nan, s) : is_nan;
      extreme = where(found, extreme,
                      full({}, std::numeric_limits<double>::quiet_NaN(), x.dtype(), s), s);
      equal = where(found, equal, nan_left, s);
    }
    const Tensor index = argmax(cast(equal, DType::i32, s), {axis}, true, s);
    const Tensor hit = eq(positions, index, s);
    taken = taken.defined() ? where(hit, yes, taken, s) : hit;
    values.push_back(extreme);
    indices.push_back(index);
  }
  return {concat(ctx, values, axis), concat(ctx, indices, axis)};
}

// ReverseSequence: in each batch entry the first sequence_lens[b] steps along the time axis
// reversed; one take() per batch entry.
Outputs reverse_sequence(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  if (x.dim() < 2) ctx.invalid("expects at least 2 dimensions, got " + to_string(x.shape()));
  const int64_t batch_axis = ctx.axis(ctx.attr_int("batch_axis", 1), x.dim());
  const int64_t time_axis = ctx.axis(ctx.attr_int("time_axis", 0), x.dim());
  if (batch_axis > 1 || time_axis > 1 || batch_axis == time_axis)
    ctx.invalid("batch_axis and time_axis must be 0 and 1 in either order");
  const std::vector<int64_t> lengths = ctx.read_ints(in.at(1));
  const int64_t steps = x.size(time_axis);
  if (static_cast<int64_t>(lengths.size()) != x.size(batch_axis))
    ctx.invalid("sequence_lens holds " + std::to_string(lengths.size()) + " lengths for " +
                std::to_string(x.size(batch_axis)) + " batch entries");
  std::vector<Tensor> entries;
  for (int64_t b = 0; b < x.size(batch_axis); ++b) {
    const int64_t length = lengths[static_cast<size_t>(b)];
    if (length < 0 || length > steps)
      ctx.invalid("sequence length " + std::to_string(length) + " of batch entry " +
                  std::to_string(b) + " is out of range for " + std::to_string(steps) +
                  " time steps");
    std::vector<int64_t> picks;
    for (int64_t t = length - 1; t >= 0; --t) picks.push_back(t);
    for (int64_t t = length; t < steps; ++t) picks.push_back(t);
    entries.push_back(take(ctx, x.slice(batch_axis, b, b + 1), time_axis, picks));
  }
  return {concat(ctx, entries, batch_axis)};
}

// Unique, on the host (its output's size depends on the values): the slices along the axis (the
// elements, without one) grouped by equality, in sorted order or in order of first occurrence;
// Y is then take() of the first of each group.
Outputs unique(const OpContext& ctx, const Inputs& in) {
  Tensor x = in.at(0);
  if (!ctx.has("axis")) x = x.contiguous(ctx.stream()).reshape({x.numel()});
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), x.dim());
  const std::vector<double> values =
      ctx.read_values(x.permute(axis_first(axis, x.dim())).contiguous(ctx.stream()));
  for (double value : values) {
    if (value != value) ctx.unsupported("NaN values");
    if (x.dtype() == DType::i64 && std::abs(value) > 0x1p53)
      ctx.unsupported("int64 values beyond 2^53");
  }
  const int64_t count = x.size(axis);
  const auto width = static_cast<size_t>(count == 0 ? 0 : x.numel() / count);
  auto slice_of = [&](int64_t i) {
    const auto begin = values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(i) * width);
    return std::vector<double>(begin, begin + static_cast<std::ptrdiff_t>(width));
  };
  std::map<std::vector<double>, int64_t> group_of;  // slice -> its group, sorted by slice
  std::vector<int64_t> firsts, inverse, counts;
  for (int64_t i = 0; i < count; ++i) {
    const auto [found, added] = group_of.emplace(slice_of(i), static_cast<int64_t>(firsts.size()));
    if (added) {
      firsts.push_back(i);
      counts.push_back(0);
    }
    inverse.push_back(found->second);
    ++counts[static_cast<size_t>(found->second)];
  }
  if (ctx.attr_int("sorted", 1) != 0) {
    std::vector<int64_t> renumbered(firsts.size());
    std::vector<int64_t> sorted_firsts, sorted_counts;
    for (const auto& [slice, group] : group_of) {
      renumbered[static_cast<size_t>(group)] = static_cast<int64_t>(sorted_firsts.size());
      sorted_firsts.push_back(firsts[static_cast<size_t>(group)]);
      sorted_counts.push_back(counts[static_cast<size_t>(group)]);
    }
    for (int64_t& group : inverse) group = renumbered[static_cast<size_t>(group)];
    firsts = sorted_firsts;
    counts = sorted_counts;
  }
  Stream& s = ctx.stream();
  const Shape groups{static_cast<int64_t>(firsts.size())};
  return {take(ctx, x, axis, firsts), ints_tensor(firsts, groups, s),
          ints_tensor(inverse, {count}, s), ints_tensor(counts, groups, s)};
}

// A box as its corners, lower first, from [y1, x1, y2, x2] (either corner first) or from
// [x_centre, y_centre, width, height].
struct Box {
  double y1, x1, y2, x2;
};

Box box_at(const std::vector<double>& boxes, size_t at, bool centre_point) {
  const double a = boxes[at], b = boxes[at + 1], c = boxes[at + 2], d = boxes[at + 3];
  if (centre_point) return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

double iou(const Box& a, const Box& b) {
  const double area_a = (a.y2 - a.y1) * (a.x2 - a.x1);
  const double area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return 0;
  const double height = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double width = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double overlap = height * width;
  return overlap / (area_a + area_b - overlap);
}

// NonMaxSuppression, on the host (greedy and irregular, its output's size depends on the
// values): per batch and class, boxes by descending score (the lower index first among equal
// ones) above score_threshold, each kept unless it overlaps a kept one by more than
// iou_threshold, at most max_output_boxes_per_class of them.
Outputs non_max_suppression(const OpContext& ctx, const Inputs& in) {
  const Tensor& boxes_tensor = in.at(0);
  const Tensor& scores_tensor = in.at(1);
  if (boxes_tensor.dim() != 3 || boxes_tensor.size(2) != 4 || scores_tensor.dim() != 3 ||
      scores_tensor.size(0) != boxes_tensor.size(0) ||
      scores_tensor.size(2) != boxes_tensor.size(1))
    ctx.invalid("boxes " + to_string(boxes_tensor.shape()) + " and scores " +
                to_string(scores_tensor.shape()) +
                " must be [batches, boxes, 4] and [batches, classes, boxes]");
  const int64_t limit = given(in, 2) ? static_cast<int64_t>(ctx.read_scalar(in[2])) : 0;
  const double iou_threshold = given(in, 3) ? ctx.read_scalar(in[3]) : 0;
  const bool by_score = given(in, 4);
  const double score_threshold = by_score ? ctx.read_scalar(in[4]) : 0;
  const bool centre_point = ctx.attr_int("center_point_box", 0) != 0;
  const std::vector<double> boxes = ctx.read_values(boxes_tensor);
  const std::vector<double> scores = ctx.read_values(scores_tensor);
  const int64_t batches = scores_tensor.size(0), classes = scores_tensor.size(1),
                count = scores_tensor.size(2);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const size_t first_score = static_cast<size_t>((b * classes + c) * count);
      auto score = [&](int64_t i) { return scores[first_score + static_cast<size_t>(i)]; };
      std::vector<int64_t> order;
      for (int64_t i = 0; i < count; ++i)
        if (!by_score || score(i) > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return score(i) > score(j); });
      std::vector<Box> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= limit) break;
        const Box box = box_at(boxes, static_cast<size_t>((b * count + i) * 4), centre_point);
        if (std::any_of(kept.begin(), kept.end(),
                        [&](const Box& other) { return iou(box, other) > iou_threshold; }))
          continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  return {ints_tensor(selected, {static_cast<int64_t>(selected.size() / 3), 3}, ctx.stream())};
}

}  // namespace

std::vector<OnnxOp> scatter_onnx_ops() {
  return {
      {"Scatter", 9, scatter_elements},
      {"ScatterElements", 11, scatter_elements},
      {"ScatterND", 11, scatter_nd},
      {"GatherND", 11, gather_nd},
      {"TopK", 1, top_k},
      {"ReverseSequence", 10, reverse_sequence},
      {"Unique", 11, unique},
      {"NonMaxSuppression", 10, non_max_suppression},
  };
}

}  // namespace hal::model
