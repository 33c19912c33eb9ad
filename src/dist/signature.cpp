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

uint64_t hash_shapes(const CollectiveCall& call) {
  std::string text;
  for (const Tensor* tensor : {&call.input, &call.output})
    text += tensor->defined() ? hal::to_string(tensor->shape()) : std::string("-");
  return hal::detail::fnv1a_64(text);
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
    s.dims = static_cast<uint8_t>(std::min<int64_t>(tensor.dim(), 255));
    for (int d = 0; d < std::min<int>(s.dims, Signature::kShownDims); ++d)
      s.shape[d] = tensor.shape()[d];
    s.shape_hash = hash_shapes(call);
  }
  return s;
}

std::string describe(const Signature& s) {
  const auto kind = static_cast<Collective>(s.kind);
  std::string text = std::string(to_string(kind)) + "(";
  if (kind != Collective::barrier) {
    text += std::string(to_string(static_cast<DType>(s.dtype))) + "[";
    for (int d = 0; d < std::min<int>(s.dims, Signature::kShownDims); ++d)
      text += (d ? ", " : "") + std::to_string(s.shape[d]);
    if (s.dims > Signature::kShownDims) text += ", ...";
    text += "]";
    if (s.dims == 0 && s.count != 1) text += " of " + std::to_string(s.count);
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
    same = ours.shape_hash == theirs.shape_hash;
  if (same) return std::nullopt;
  std::string text = "rank " + std::to_string(our_rank) + " called " + describe(ours);
  if (ours.sequence != theirs.sequence) text += " as #" + std::to_string(ours.sequence);
  text += ", rank " + std::to_string(their_rank) + " called " + describe(theirs);
  if (ours.sequence != theirs.sequence) text += " as #" + std::to_string(theirs.sequence);
  if (ours.shape_hash != theirs.shape_hash && describe(ours) == describe(theirs))
    text += " (the shapes differ past the first " + std::to_string(Signature::kShownDims) +
            " dimensions, or the other tensor's shape differs)";
  return text;
}

}  // namespace hal::dist::detail
