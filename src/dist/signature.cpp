#include "dist/signature.hpp"

#include <algorithm>

#include "core/hash.hpp"

namespace hal::dist::detail {
namespace {

const Tensor& first_tensor(const CollectiveCall& call) {
  return call.input.defined() ? call.input : call.output;
}

bool has_root(Collective kind) {
  return kind == Collective::broadcast || kind == Collective::reduce;
}

bool has_op(Collective kind) {
  return kind == Collective::all_reduce || kind == Collective::reduce ||
         kind == Collective::reduce_scatter;
}

// Whether every rank passes an output beside its input, whose shape is then theirs to agree on.
// Not reduce's: it is the root's alone (undefined elsewhere, as the API allows); not
// broadcast's (its input), nor those of send, recv and barrier (one tensor, or none).
bool output_compared(Collective kind) {
  return kind == Collective::all_reduce || kind == Collective::all_gather ||
         kind == Collective::reduce_scatter || kind == Collective::all_to_all;
}

uint64_t hash_shape(const Tensor& tensor) {
  return hal::detail::fnv1a_64(hal::to_string(tensor.shape()));
}

// The tensor's rank (255 at most) and its first dimensions, for messages.
uint8_t keep_shape(const Tensor& tensor, int64_t (&shape)[Signature::kShownDims]) {
  const auto dims = static_cast<uint8_t>(std::min<int64_t>(tensor.dim(), 255));
  for (int d = 0; d < std::min<int>(dims, Signature::kShownDims); ++d) shape[d] = tensor.shape()[d];
  return dims;
}

std::string shape_text(const int64_t (&shape)[Signature::kShownDims], uint8_t dims) {
  std::string text = "[";
  for (int d = 0; d < std::min<int>(dims, Signature::kShownDims); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  if (dims > Signature::kShownDims) text += ", ...";
  return text + "]";
}

bool output_shown(const Signature& s) {
  if (!s.has_output) return false;
  if (s.output_dims != s.dims) return true;
  return !std::equal(s.shape, s.shape + std::min<int>(s.dims, Signature::kShownDims),
                     s.output_shape);
}

// What describe() cannot show: a difference past the dimensions it prints.
std::string hidden_difference(const Signature& ours, const Signature& theirs) {
  const std::string past =
      " shapes differ past the first " + std::to_string(Signature::kShownDims) + " dimensions)";
  if (ours.shape_hash != theirs.shape_hash) return " (the" + past;
  if (ours.output_hash != theirs.output_hash) return " (the outputs'" + past;
  return "";
}

}  // namespace

Signature signature_of(const CollectiveCall& call, uint64_t sequence) {
  Signature s;
  s.sequence = sequence;
  s.kind = static_cast<uint8_t>(call.kind);
  s.op = static_cast<uint8_t>(call.op);
  s.root = call.root;
  const Tensor& tensor = first_tensor(call);
  if (tensor.defined()) {
    s.dtype = static_cast<uint8_t>(tensor.dtype());
    s.count = tensor.numel();
    s.dims = keep_shape(tensor, s.shape);
    s.shape_hash = hash_shape(tensor);
  }
  if (output_compared(call.kind) && call.input.defined() && call.output.defined()) {
    s.has_output = 1;
    s.output_dims = keep_shape(call.output, s.output_shape);
    s.output_hash = hash_shape(call.output);
  }
  return s;
}

std::string describe(const Signature& s) {
  const auto kind = static_cast<Collective>(s.kind);
  std::string text = std::string(to_string(kind)) + "(";
  if (kind != Collective::barrier) {
    const std::string dtype(to_string(static_cast<DType>(s.dtype)));
    text += dtype + shape_text(s.shape, s.dims);
    if (s.dims == 0 && s.count != 1) text += " of " + std::to_string(s.count);
    if (output_shown(s)) text += " into " + dtype + shape_text(s.output_shape, s.output_dims);
  }
  if (has_op(kind)) text += ", " + std::string(to_string(static_cast<ReduceOp>(s.op)));
  if (has_root(kind)) text += ", root " + std::to_string(s.root);
  return text + ")";
}

std::optional<std::string> mismatch(const Signature& ours, int our_rank, const Signature& theirs,
                                    int their_rank, DebugLevel level) {
  if (level == DebugLevel::off) return std::nullopt;
  const auto kind = static_cast<Collective>(ours.kind);
  bool same = ours.sequence == theirs.sequence && ours.kind == theirs.kind;
  if (same && kind != Collective::barrier)
    same = ours.dtype == theirs.dtype && ours.count == theirs.count;
  if (same && has_op(kind)) same = ours.op == theirs.op;
  if (same && has_root(kind)) same = ours.root == theirs.root;
  if (same && level == DebugLevel::detail && kind != Collective::barrier)
    same = ours.shape_hash == theirs.shape_hash && ours.output_hash == theirs.output_hash;
  if (same) return std::nullopt;
  const std::string our_call = describe(ours), their_call = describe(theirs);
  std::string text = "rank " + std::to_string(our_rank) + " called " + our_call;
  if (ours.sequence != theirs.sequence) text += " as #" + std::to_string(ours.sequence);
  text += ", rank " + std::to_string(their_rank) + " called " + their_call;
  if (ours.sequence != theirs.sequence) text += " as #" + std::to_string(theirs.sequence);
  if (our_call == their_call && ours.sequence == theirs.sequence)
    text += hidden_difference(ours, theirs);
  return text;
}

}  // namespace hal::dist::detail
