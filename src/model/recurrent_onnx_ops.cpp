// ONNX's recurrent layers (RNN, GRU, LSTM), from hal's matmul and elementwise ops. Each
// direction projects the inputs of all time steps at once (one batched matmul with W and the
// biases), then steps through time with one matmul by R and the gate activations per step; the
// steps' hidden states are joined along the sequence axis into Y. Einsum, by batched matmul,
// lives here too.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

enum class Cell { rnn, gru, lstm };

int64_t gate_count(Cell cell) { return cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4; }
// f for RNN; f, g for GRU; f, g, h for LSTM.
size_t activations_per_direction(Cell cell) {
  return cell == Cell::lstm ? 3 : gate_count(cell) - 1 + (cell == Cell::rnn);
}
std::vector<std::string> default_activations(Cell cell) {
  if (cell == Cell::rnn) return {"tanh"};
  if (cell == Cell::gru) return {"sigmoid", "tanh"};
  return {"sigmoid", "tanh", "tanh"};
}

Tensor scalar(double value, const Tensor& like, Stream& s) {
  return full({}, value, like.dtype(), s);
}

// One of the `activations`, lower-cased, with the alpha and beta it uses.
struct Activation {
  std::string name;
  double alpha = 0.0, beta = 0.0;
};

Tensor apply(const Activation& f, const Tensor& x, Stream& s) {
  const std::string& n = f.name;
  if (n == "sigmoid") return sigmoid(x, s);
  if (n == "tanh") return tanh(x, s);
  if (n == "relu") return relu(x, s);
  if (n == "softsign") return div(x, add(abs(x, s), scalar(1.0, x, s), s), s);
  if (n == "softplus")  // max(x, 0) + log(1 + exp(-|x|)): exp(x) would overflow
    return add(maximum(x, scalar(0.0, x, s), s),
               log(add(scalar(1.0, x, s), exp(neg(abs(x, s), s), s), s), s), s);
  const Tensor alpha = scalar(f.alpha, x, s), beta = scalar(f.beta, x, s);
  const Tensor zero = scalar(0.0, x, s);
  if (n == "affine") return add(mul(x, alpha, s), beta, s);
  if (n == "scaledtanh") return mul(alpha, tanh(mul(x, beta, s), s), s);
  if (n == "hardsigmoid")
    return minimum(maximum(add(mul(x, alpha, s), beta, s), zero, s), scalar(1.0, x, s), s);
  if (n == "leakyrelu") return where(ge(x, zero, s), x, mul(x, alpha, s), s);
  if (n == "thresholdedrelu") return where(ge(x, alpha, s), x, zero, s);
  // elu
  return where(ge(x, zero, s), x, mul(alpha, sub(exp(x, s), scalar(1.0, x, s), s), s), s);
}

// The activations of every direction, in order. activation_alpha and activation_beta are
// consumed in order by the activations that take them (as onnxruntime reads them); the four
// that are ONNX operators default to those operators' values.
std::vector<Activation> activations(const OpContext& ctx, Cell cell, int64_t directions) {
  std::vector<std::string> names = ctx.attr_strings("activations");
  if (!ctx.has("activations"))
    for (int64_t d = 0; d < directions; ++d)
      for (const auto& name : default_activations(cell)) names.push_back(name);
  const size_t expected = activations_per_direction(cell) * static_cast<size_t>(directions);
  if (names.size() != expected)
    ctx.invalid("attribute 'activations' has " + std::to_string(names.size()) +
                " names, expected " + std::to_string(expected));
  const std::vector<float> alphas = ctx.attr_floats("activation_alpha");
  const std::vector<float> betas = ctx.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> result;
  for (const std::string& given_name : names) {
    Activation f{given_name};
    std::transform(f.name.begin(), f.name.end(), f.name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto take_parameter = [&](const std::vector<float>& values, size_t& next,
                              std::optional<double> fallback, const char* attribute) {
      if (next < values.size()) return static_cast<double>(values[next++]);
      if (!fallback)
        ctx.unsupported("activation " + given_name + " without a value in " + attribute);
      return *fallback;
    };
    const std::string& n = f.name;
    if (n == "affine" || n == "scaledtanh") {
      f.alpha = take_parameter(alphas, next_alpha, std::nullopt, "activation_alpha");
      f.beta = take_parameter(betas, next_beta, std::nullopt, "activation_beta");
    } else if (n == "hardsigmoid") {
      f.alpha = take_parameter(alphas, next_alpha, 0.2, "activation_alpha");
      f.beta = take_parameter(betas, next_beta, 0.5, "activation_beta");
    } else if (n == "leakyrelu") {
      f.alpha = take_parameter(alphas, next_alpha, 0.01, "activation_alpha");
    } else if (n == "thresholdedrelu" || n == "elu") {
      f.alpha = take_parameter(alphas, next_alpha, 1.0, "activation_alpha");
    } else if (n != "sigmoid" && n != "tanh" && n != "relu" && n != "softsign" && n != "softplus") {
      ctx.unsupported("activation " + given_name);
    }
    result.push_back(f);
  }
  return result;
}

void expect_shape(const OpContext& ctx, const char* input, const Tensor& t, const Shape& shape) {
  if (t.shape() != shape)
    ctx.invalid("input " + std::string(input) + " has shape " + to_string(t.shape()) +
                ", expected " + to_string(shape));
}

// What every time step of one direction needs, its tensors in the order ONNX lists them.
struct Direction {
  Tensor projected;       // X W^T + biases for every step, [seq, batch, gates * hidden]
  Tensor recurrence;      // R^T, [hidden, gates * hidden]
  Tensor gru_reset_bias;  // GRU with linear_before_reset: Rbh, applied inside the reset
  Tensor peephole;        // LSTM: P, [3 * hidden], or undefined
  Tensor h, c;            // the state, [batch, hidden]
  std::vector<Activation> f;
};

// The layer's attributes and the parts every direction shares.
struct Layer {
  Cell cell = Cell::rnn;
  int64_t hidden = 0;
  std::optional<double> clip;
  bool linear_before_reset = false;
  Tensor step_mask;  // bool [seq, batch, 1]: whether step t is inside sequence b; undefined if all
};

Tensor gate(const Tensor& gates, int64_t index, int64_t hidden) {
  return gates.slice(1, index * hidden, (index + 1) * hidden);
}

Tensor clipped(const Layer& layer, const Tensor& x, Stream& s) {
  if (!layer.clip) return x;
  return minimum(maximum(x, scalar(-*layer.clip, x, s), s), scalar(*layer.clip, x, s), s);
}

Tensor activate(const Layer& layer, const Activation& f, const Tensor& x, Stream& s) {
  return apply(f, clipped(layer, x, s), s);
}

// One step: the new hidden state from the step's projected input; updates dir.c for LSTM.
Tensor step(const Layer& layer, Direction& dir, const Tensor& x, Stream& s) {
  const int64_t n = layer.hidden;
  const Tensor& h = dir.h;
  if (layer.cell == Cell::rnn)
    return activate(layer, dir.f[0], add(x, matmul(h, dir.recurrence, s), s), s);
  if (layer.cell == Cell::gru) {
    const Tensor r_zr = dir.recurrence.slice(1, 0, 2 * n),
                 r_h = dir.recurrence.slice(1, 2 * n, 3 * n);
    const Tensor zr = add(x.slice(1, 0, 2 * n), matmul(h, r_zr, s), s);
    const Tensor z = activate(layer, dir.f[0], gate(zr, 0, n), s);
    const Tensor r = activate(layer, dir.f[0], gate(zr, 1, n), s);
    Tensor recurrent_h;
    if (layer.linear_before_reset) {
      recurrent_h = matmul(h, r_h, s);
      if (dir.gru_reset_bias.defined()) recurrent_h = add(recurrent_h, dir.gru_reset_bias, s);
      recurrent_h = mul(r, recurrent_h, s);
    } else {
      recurrent_h = matmul(mul(r, h, s), r_h, s);
    }
    const Tensor candidate = activate(layer, dir.f[1], add(gate(x, 2, n), recurrent_h, s), s);
    // (1 - z) h~ + z h, as h~ + z (h - h~)
    return add(candidate, mul(z, sub(h, candidate, s), s), s);
  }
  const Tensor gates = add(x, matmul(h, dir.recurrence, s), s);
  auto with_peephole = [&](const Tensor& pre, int64_t index, const Tensor& c) {
    return dir.peephole.defined()
               ? add(pre, mul(gate(dir.peephole.unsqueeze(0), index, n), c, s), s)
               : pre;
  };
  const Tensor i = activate(layer, dir.f[0], with_peephole(gate(gates, 0, n), 0, dir.c), s);
  const Tensor f = activate(layer, dir.f[0], with_peephole(gate(gates, 2, n), 2, dir.c), s);
  const Tensor candidate = activate(layer, dir.f[1], gate(gates, 3, n), s);
  const Tensor c = add(mul(f, dir.c, s), mul(i, candidate, s), s);
  const Tensor o = activate(layer, dir.f[0], with_peephole(gate(gates, 1, n), 1, c), s);
  dir.c = c;
  return mul(o, apply(dir.f[2], c, s), s);
}

// Runs one direction over dir.projected, given in its own time order. Returns the hidden state
// of every step, [seq, batch, hidden] (zeros past a sequence's end); dir.h and dir.c end as
// the last state inside each sequence.
Tensor run_steps(const OpContext& ctx, const Layer& layer, Direction& dir, bool wants_y) {
  Stream& s = ctx.stream();
  std::vector<Tensor> steps;
  const int64_t seq = dir.projected.size(0);
  for (int64_t t = 0; t < seq; ++t) {
    const Tensor previous_c = dir.c;
    Tensor h = step(layer, dir, dir.projected.slice(0, t, t + 1).squeeze(0), s);
    if (layer.step_mask.defined()) {
      const Tensor inside = layer.step_mask.slice(0, t, t + 1).squeeze(0);
      if (dir.c.defined()) dir.c = where(inside, dir.c, previous_c, s);
      if (wants_y) steps.push_back(where(inside, h, scalar(0.0, h, s), s).unsqueeze(0));
      dir.h = where(inside, h, dir.h, s);
    } else {
      if (wants_y) steps.push_back(h.unsqueeze(0));
      dir.h = h;
    }
  }
  return wants_y ? concat(ctx, steps, 0) : Tensor();
}

// `t` [seq, batch, ...] with each sequence's steps reversed: all seq of them, or where
// `lengths` is not empty, the first lengths[b] of sequence b (the padding stays in place).
Tensor reverse_in_time(const OpContext& ctx, const Tensor& t, const std::vector<int64_t>& lengths) {
  const int64_t seq = t.size(0), batch = t.size(1);
  std::vector<int64_t> picks;
  if (lengths.empty()) {
    for (int64_t step = seq - 1; step >= 0; --step) picks.push_back(step);
    return take(ctx, t, 0, picks);
  }
  for (int64_t step = 0; step < seq; ++step)
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t length = lengths[static_cast<size_t>(b)];
      picks.push_back((step < length ? length - 1 - step : step) * batch + b);
    }
  Shape flat = t.shape();
  flat.erase(flat.begin());
  flat[0] = seq * batch;
  return take(ctx, t.contiguous(ctx.stream()).reshape(flat), 0, picks).reshape(t.shape());
}

// sequence_lens read to the host: empty when every sequence is seq steps long.
std::vector<int64_t> sequence_lengths(const OpContext& ctx, const Inputs& in, int64_t seq,
                                      int64_t batch) {
  if (!given(in, 4)) return {};
  expect_shape(ctx, "sequence_lens", in[4], {batch});
  const std::vector<int64_t> lengths = ctx.read_ints(in[4]);
  for (int64_t length : lengths) {
    if (length < 0 || length > seq)
      ctx.invalid("sequence_lens holds " + std::to_string(length) + ", outside [0, " +
                  std::to_string(seq) + "]");
    if (length == 0) ctx.unsupported("sequence_lens of 0 (an empty sequence)");
  }
  const bool uniform =
      std::all_of(lengths.begin(), lengths.end(), [&](int64_t length) { return length == seq; });
  return uniform ? std::vector<int64_t>{} : lengths;
}

// bool [seq, batch, 1]: whether step t lies inside sequence b.
Tensor step_mask(const std::vector<int64_t>& lengths, int64_t seq, Stream& s) {
  const auto batch = static_cast<int64_t>(lengths.size());
  std::vector<uint8_t> inside;
  for (int64_t step = 0; step < seq; ++step)
    for (int64_t length : lengths) inside.push_back(step < length ? 1 : 0);
  return from_host(inside.data(), {seq, batch, 1}, DType::boolean, s);
}

// The biases folded into the projection, [gates * hidden]; for GRU with
// linear_before_reset, Rbh stays out (returned in `reset_bias`) since the reset gate scales it.
Tensor input_bias(const OpContext& ctx, const Layer& layer, const Tensor& b, Tensor& reset_bias) {
  Stream& s = ctx.stream();
  const int64_t width = gate_count(layer.cell) * layer.hidden, n = layer.hidden;
  const Tensor wb = b.slice(0, 0, width), rb = b.slice(0, width, 2 * width);
  if (!(layer.cell == Cell::gru && layer.linear_before_reset)) return add(wb, rb, s);
  reset_bias = rb.slice(0, 2 * n, 3 * n);
  return concat(
      ctx, {add(wb.slice(0, 0, 2 * n), rb.slice(0, 0, 2 * n), s), wb.slice(0, 2 * n, 3 * n)}, 0);
}

bool wants_output(const OpContext& ctx, size_t index) {
  const auto& outputs = ctx.node().outputs;
  return outputs.size() > index && !outputs[index].empty();
}

// initial_h or initial_c as [directions, batch, hidden], or undefined when not given.
Tensor initial_state(const OpContext& ctx, const Inputs& in, size_t index, const char* name,
                     bool batch_first, const Shape& shape) {
  if (!given(in, index)) return Tensor();
  const Tensor state = batch_first ? in[index].transpose(0, 1) : in[index];
  expect_shape(ctx, name, state, shape);
  return state;
}

Outputs recurrent(const OpContext& ctx, const Inputs& in, Cell cell) {
  Stream& s = ctx.stream();
  const std::string direction = ctx.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.invalid("direction '" + direction + "'");
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.opset() >= 14 ? ctx.attr_int("layout", 0) : 0;
  if (layout != 0 && layout != 1) ctx.invalid("layout " + std::to_string(layout));
  if (cell == Cell::lstm && ctx.attr_int("input_forget", 0) != 0)
    ctx.unsupported("input_forget=1 (coupled input and forget gates)");

  Tensor x = in.at(0);
  const DType dtype = x.dtype();
  if (x.dim() != 3) ctx.invalid("X must be 3-d, got " + to_string(x.shape()));
  if (layout == 1) x = x.transpose(0, 1);
  const int64_t seq = x.size(0), batch = x.size(1), input_size = x.size(2);
  const Tensor &w = in.at(1), &r = in.at(2);
  if (r.dim() != 3) ctx.invalid("R must be 3-d, got " + to_string(r.shape()));
  const int64_t hidden = r.size(2), width = gate_count(cell) * hidden;
  if (ctx.has("hidden_size") && ctx.attr_int("hidden_size", 0) != hidden)
    ctx.invalid("hidden_size " + std::to_string(ctx.attr_int("hidden_size", 0)) +
                " differs from R's " + std::to_string(hidden));
  expect_shape(ctx, "W", w, {directions, width, input_size});
  expect_shape(ctx, "R", r, {directions, width, hidden});
  if (given(in, 3)) expect_shape(ctx, "B", in[3], {directions, 2 * width});
  const Shape state_shape{directions, batch, hidden};
  const Tensor initial_h = initial_state(ctx, in, 5, "initial_h", layout == 1, state_shape);
  const Tensor initial_c = cell == Cell::lstm
                               ? initial_state(ctx, in, 6, "initial_c", layout == 1, state_shape)
                               : Tensor();
  const bool peepholes = cell == Cell::lstm && given(in, 7);
  if (peepholes) expect_shape(ctx, "P", in[7], {directions, 3 * hidden});

  Layer layer;
  layer.cell = cell;
  layer.hidden = hidden;
  if (ctx.has("clip")) layer.clip = ctx.attr_float("clip", 0.0f);
  layer.linear_before_reset = cell == Cell::gru && ctx.attr_int("linear_before_reset", 0) != 0;
  const std::vector<int64_t> lengths = sequence_lengths(ctx, in, seq, batch);
  if (!lengths.empty()) layer.step_mask = step_mask(lengths, seq, s);
  const std::vector<Activation> all_activations = activations(ctx, cell, directions);
  const size_t per_direction = activations_per_direction(cell);

  const bool wants_y = wants_output(ctx, 0);
  const Tensor x_rows = x.contiguous(s).reshape({seq * batch, input_size});
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < directions; ++d) {
    Direction dir;
    const Tensor projected = matmul(x_rows, w.slice(0, d, d + 1).squeeze(0).transpose(0, 1), s);
    dir.projected =
        given(in, 3)
            ? add(projected,
                  input_bias(ctx, layer, in[3].slice(0, d, d + 1).squeeze(0), dir.gru_reset_bias),
                  s)
            : projected;
    dir.projected = dir.projected.reshape({seq, batch, width});
    const bool reverse = direction == "reverse" || d == 1;
    if (reverse) dir.projected = reverse_in_time(ctx, dir.projected, lengths);
    dir.recurrence = r.slice(0, d, d + 1).squeeze(0).transpose(0, 1);
    if (peepholes) dir.peephole = in[7].slice(0, d, d + 1).squeeze(0);
    auto state = [&](const Tensor& initial) {
      return initial.defined() ? initial.slice(0, d, d + 1).squeeze(0).contiguous(s)
                               : zeros({batch, hidden}, dtype, s);
    };
    dir.h = state(initial_h);
    if (cell == Cell::lstm) dir.c = state(initial_c);
    const auto first = all_activations.begin() + static_cast<std::ptrdiff_t>(d * per_direction);
    dir.f.assign(first, first + static_cast<std::ptrdiff_t>(per_direction));

    Tensor y = run_steps(ctx, layer, dir, wants_y);
    if (wants_y && reverse) y = reverse_in_time(ctx, y, lengths);
    if (wants_y) ys.push_back(y.unsqueeze(1));
    hs.push_back(dir.h.unsqueeze(0));
    if (cell == Cell::lstm) cs.push_back(dir.c.unsqueeze(0));
  }
  // [directions, batch, hidden], or [batch, directions, hidden] for layout 1.
  auto final_state = [&](const std::vector<Tensor>& states) {
    const Tensor joined = concat(ctx, states, 0);
    return layout == 1 ? joined.transpose(0, 1).contiguous(s) : joined;
  };
  Outputs out(cell == Cell::lstm ? 3 : 2);
  if (wants_y) {
    const Tensor y = concat(ctx, ys, 1);  // [seq, directions, batch, hidden]
    out[0] = layout == 1 ? y.permute({2, 0, 1, 3}).contiguous(s) : y;
  }
  out[1] = final_state(hs);
  if (cell == Cell::lstm) out[2] = final_state(cs);
  return out;
}

// Checks the dtypes; f16 is computed in f32 throughout, since rounding the state to f16 at every op
// of every step would compound over the sequence.
Outputs recurrent_op(const OpContext& ctx, const Inputs& in, Cell cell) {
  const DType dtype = in.at(0).dtype();
  if (dtype != DType::f32 && dtype != DType::f64 && dtype != DType::f16)
    ctx.unsupported("dtype " + std::string(to_string(dtype)));
  for (size_t i = 1; i < in.size(); ++i)
    if (i != 4 && given(in, i) && in[i].dtype() != dtype)
      ctx.invalid("input " + std::to_string(i) + " is " + in[i].describe() + ", X is " +
                  std::string(to_string(dtype)));
  if (dtype != DType::f16) return recurrent(ctx, in, cell);
  Stream& s = ctx.stream();
  Inputs widened = in;
  for (size_t i = 0; i < widened.size(); ++i)
    if (i != 4 && given(in, i)) widened[i] = cast(in[i], DType::f32, s);
  Outputs out = recurrent(ctx, widened, cell);
  for (Tensor& t : out)
    if (t.defined()) t = cast(t, DType::f16, s);
  return out;
}

// Einsum: each operand's repeated labels become a diagonal view, labels no other term uses are
// summed out, and the operands are folded left to right, each pair by one batched matmul
// (mul and sum for integers); the result is permuted to the output's order.

// A term's labels, one char per dimension: the letters, and for the dimensions "..." covers
// chars 1, 2, ... (right-aligned, so that they broadcast as NumPy's do).
using Labels = std::string;

char ellipsis_label(int64_t index) { return static_cast<char>(1 + index); }
bool is_ellipsis_label(char label) { return label > 0 && label < 'A'; }

// The letters of a term, with "..." kept as one '.'; InvalidArgument for anything else.
Labels parse_term(const OpContext& ctx, const std::string& term) {
  Labels labels;
  for (size_t i = 0; i < term.size(); ++i) {
    if (std::isalpha(static_cast<unsigned char>(term[i]))) {
      labels += term[i];
    } else if (term.compare(i, 3, "...") == 0 && labels.find('.') == Labels::npos) {
      labels += '.';
      i += 2;
    } else {
      ctx.invalid("equation term '" + term + "' holds '" + term[i] +
                  "' where a letter or one "
                  "'...' belongs");
    }
  }
  return labels;
}

Labels expand_ellipsis(const Labels& term, int64_t first, int64_t count) {
  Labels labels;
  for (char c : term)
    if (c == '.')
      for (int64_t k = 0; k < count; ++k) labels += ellipsis_label(first + k);
    else
      labels += c;
  return labels;
}

struct Operand {
  Labels labels;
  Tensor t;
};

// The view of `x` along its first occurrence of each label, the repeats folded into it (a
// diagonal): their strides add up.
Operand diagonal(const OpContext& ctx, const Operand& x) {
  Labels labels;
  Shape shape, strides;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    const size_t first = labels.find(x.labels[d]);
    const int64_t size = x.t.size(static_cast<int64_t>(d));
    const int64_t stride = x.t.strides()[d];
    if (first == Labels::npos) {
      labels += x.labels[d];
      shape.push_back(size);
      strides.push_back(stride);
    } else if (shape[first] != size) {
      ctx.invalid("label '" + std::string(1, x.labels[d]) + "' repeated over dimensions of " +
                  std::to_string(shape[first]) + " and " + std::to_string(size));
    } else {
      strides[first] += stride;
    }
  }
  if (labels.size() == x.labels.size()) return x;
  return {labels, Tensor(x.t.storage(), x.t.dtype(), shape, strides, x.t.offset())};
}

// x with the labels outside `keep` summed out.
Operand sum_except(const OpContext& ctx, const Operand& x, const Labels& keep) {
  std::vector<int64_t> axes;
  Labels labels;
  for (size_t d = 0; d < x.labels.size(); ++d)
    if (keep.find(x.labels[d]) == Labels::npos)
      axes.push_back(static_cast<int64_t>(d));
    else
      labels += x.labels[d];
  if (axes.empty()) return x;
  return {labels, as_dtype(sum(x.t, axes, false, ctx.stream()), x.t.dtype(), ctx.stream())};
}

// x permuted to `order` (a permutation of its labels) and seen as `shape`.
Tensor arranged(const Operand& x, const Labels& order, const Shape& shape, Stream& s) {
  std::vector<int64_t> permutation;
  for (char label : order) permutation.push_back(static_cast<int64_t>(x.labels.find(label)));
  return x.t.permute(permutation).contiguous(s).reshape(shape);
}

int64_t size_of_label(const Operand& x, char label) {
  return x.t.size(static_cast<int64_t>(x.labels.find(label)));
}

int64_t product(const Operand& x, const Labels& labels) {
  int64_t total = 1;
  for (char label : labels) total *= size_of_label(x, label);
  return total;
}

// a and b contracted over the labels they share outside `keep`: the shared labels in `keep`
// are batch dimensions, and [a's own, contracted] @ [contracted, b's own] is one matmul.
Operand contract(const OpContext& ctx, const Operand& a, const Operand& b, const Labels& keep) {
  Stream& s = ctx.stream();
  Labels batch, contracted, a_only, b_only;
  for (char label : a.labels)
    if (b.labels.find(label) == Labels::npos)
      a_only += label;
    else
      (keep.find(label) == Labels::npos ? contracted : batch) += label;
  for (char label : b.labels)
    if (a.labels.find(label) == Labels::npos) b_only += label;
  Shape a_shape, b_shape, out_shape;
  for (char label : batch) {
    a_shape.push_back(size_of_label(a, label));
    b_shape.push_back(size_of_label(b, label));
    out_shape.push_back(std::max(a_shape.back(), b_shape.back()));
  }
  for (char label : a_only) out_shape.push_back(size_of_label(a, label));
  for (char label : b_only) out_shape.push_back(size_of_label(b, label));
  const Labels labels = batch + a_only + b_only;
  const DType dtype = promote_types(a.t.dtype(), b.t.dtype());
  if (dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16) {
    Shape as = a_shape, bs = b_shape;
    as.insert(as.end(), {product(a, a_only), product(a, contracted)});
    bs.insert(bs.end(), {product(b, contracted), product(b, b_only)});
    const Tensor product_ab = matmul(arranged(a, batch + a_only + contracted, as, s),
                                     arranged(b, batch + contracted + b_only, bs, s), s);
    return {labels, product_ab.reshape(out_shape)};
  }
  // Integers: both broadcast over [batch, a's own, b's own, contracted], multiplied, summed.
  const Labels all = labels + contracted;
  auto aligned = [&](const Operand& x) {
    Labels present;
    Shape shape;
    for (char label : all) {
      const bool has = x.labels.find(label) != Labels::npos;
      if (has) present += label;
      shape.push_back(has ? size_of_label(x, label) : 1);
    }
    return arranged(x, present, shape, s);
  };
  Operand joined{all, mul(aligned(a), aligned(b), s)};
  return sum_except(ctx, joined, labels);
}

// The output's labels: as written after "->" (its "..." covering every ellipsis dimension), or
// implicitly the ellipsis dimensions then the letters used once, in alphabetical order.
Labels output_labels(const OpContext& ctx, const std::string& equation, size_t arrow,
                     const std::vector<Labels>& terms, int64_t ellipsis_rank) {
  if (arrow != std::string::npos) {
    const Labels written = parse_term(ctx, equation.substr(arrow + 2));
    if (ellipsis_rank > 0 && written.find('.') == Labels::npos)
      ctx.unsupported("an output without '...' where the operands have ellipsis dimensions");
    return expand_ellipsis(written, 0, ellipsis_rank);
  }
  Labels letters;
  for (const Labels& term : terms)
    for (char c : term)
      if (c != '.') letters += c;
  Labels once;
  for (char c : letters)
    if (std::count(letters.begin(), letters.end(), c) == 1) once += c;
  std::sort(once.begin(), once.end());
  return expand_ellipsis(".", 0, ellipsis_rank) + once;
}

// Every letter sized alike wherever it appears (ellipsis dimensions may broadcast from 1).
void check_label_sizes(const OpContext& ctx, const std::vector<Operand>& operands) {
  std::map<char, int64_t> sizes;
  for (const Operand& x : operands)
    for (size_t d = 0; d < x.labels.size(); ++d) {
      const char label = x.labels[d];
      const int64_t size = x.t.size(static_cast<int64_t>(d));
      const auto [known, inserted] = sizes.emplace(label, size);
      if (inserted || known->second == size) continue;
      if (is_ellipsis_label(label) && (size == 1 || known->second == 1)) {
        known->second = std::max(size, known->second);
        continue;
      }
      ctx.invalid(is_ellipsis_label(label)
                      ? "the dimensions under '...' do not broadcast"
                      : "label '" + std::string(1, label) + "' has sizes " +
                            std::to_string(known->second) + " and " + std::to_string(size));
    }
}

Outputs einsum(const OpContext& ctx, const Inputs& in) {
  std::string equation = ctx.attr_string("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  std::vector<Labels> terms;
  const std::string lhs = equation.substr(0, arrow);
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(ctx, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != in.size())
    ctx.invalid("equation '" + equation + "' has " + std::to_string(terms.size()) + " terms for " +
                std::to_string(in.size()) + " inputs");
  int64_t ellipsis_rank = 0;
  std::vector<int64_t> ellipsis_ranks;
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has_ellipsis = terms[i].find('.') != Labels::npos;
    const auto letters = static_cast<int64_t>(terms[i].size()) - (has_ellipsis ? 1 : 0);
    const int64_t covered = in[i].dim() - letters;
    if (covered < 0 || (!has_ellipsis && covered != 0))
      ctx.invalid("term '" + std::string(terms[i]) + "' does not fit input " + std::to_string(i) +
                  " of shape " + to_string(in[i].shape()));
    ellipsis_ranks.push_back(covered);
    ellipsis_rank = std::max(ellipsis_rank, covered);
  }
  const Labels output = output_labels(ctx, equation, arrow, terms, ellipsis_rank);
  for (char label : output)
    if (std::count(output.begin(), output.end(), label) != 1 ||
        std::none_of(terms.begin(), terms.end(), [&](const Labels& t) {
          return is_ellipsis_label(label) || t.find(label) != Labels::npos;
        }))
      ctx.invalid("output label '" + std::string(1, label) + "' is repeated or in no input");

  std::vector<Operand> operands;
  for (size_t i = 0; i < terms.size(); ++i)
    operands.push_back(
        {expand_ellipsis(terms[i], ellipsis_rank - ellipsis_ranks[i], ellipsis_ranks[i]), in[i]});
  check_label_sizes(ctx, operands);
  // The labels each operand must keep: the output's and those of the operands after it.
  auto needed_after = [&](size_t i) {
    Labels keep = output;
    for (size_t j = i + 1; j < operands.size(); ++j) keep += operands[j].labels;
    return keep;
  };
  auto prepared = [&](size_t i) {
    Labels keep = needed_after(i);
    for (size_t j = 0; j < i; ++j) keep += operands[j].labels;
    return sum_except(ctx, diagonal(ctx, operands[i]), keep);
  };
  Operand result = prepared(0);
  for (size_t i = 1; i < operands.size(); ++i)
    result = contract(ctx, result, prepared(i), needed_after(i));
  result = sum_except(ctx, result, output);
  std::vector<int64_t> order;
  for (char label : output) order.push_back(static_cast<int64_t>(result.labels.find(label)));
  return {result.t.permute(order).contiguous(ctx.stream())};
}

Outputs rnn(const OpContext& ctx, const Inputs& in) { return recurrent_op(ctx, in, Cell::rnn); }
Outputs gru(const OpContext& ctx, const Inputs& in) { return recurrent_op(ctx, in, Cell::gru); }
Outputs lstm(const OpContext& ctx, const Inputs& in) { return recurrent_op(ctx, in, Cell::lstm); }

}  // namespace

std::vector<OnnxOp> recurrent_onnx_ops() {
  return {
      {"RNN", 7, rnn},
      {"GRU", 7, gru},
      {"LSTM", 7, lstm},
      {"Einsum", 12, einsum},
  };
}

}  // namespace hal::model
