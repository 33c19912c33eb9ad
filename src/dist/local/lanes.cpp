#include "dist/local/lanes.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/staged_copy.hpp"
#include "dist/host_reduce.hpp"
#include "hal/backend.hpp"
#include "hal/ops.hpp"

namespace hal::dist::detail {
namespace {

// The op of hal's table that computes `op` in `dtype` (bool is logic: or as maximum, and as
// minimum).
const char* op_name(ReduceOp op, DType dtype) {
  if (dtype == DType::boolean)
    return (op == ReduceOp::sum || op == ReduceOp::max) ? "maximum" : "minimum";
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return "add";
    case ReduceOp::prod:
      return "mul";
    case ReduceOp::min:
      return "minimum";
    case ReduceOp::max:
      return "maximum";
  }
  return "add";
}

Tensor device_op(const char* name, const Tensor& a, const Tensor& b, Stream& stream) {
  const std::string_view op(name);
  if (op == "add") return add(a, b, stream);
  if (op == "mul") return mul(a, b, stream);
  if (op == "maximum") return maximum(a, b, stream);
  if (op == "minimum") return minimum(a, b, stream);
  return div(a, b, stream);
}

size_t byte_offset(const Tensor& t) { return static_cast<size_t>(t.offset()) * t.element_size(); }

// A host callback on lane's stream that reads the operands, runs `compute` on them and writes
// the result: for what the device's op table lacks.
template <class Compute>
Tensor on_host(Lane& lane, const std::vector<Tensor>& operands, Compute compute) {
  const Tensor& first = operands.front();
  Tensor out = empty(first.shape(), first.dtype(), lane.device);
  lane.stream.host_callback([operands, out, compute] {
    const size_t bytes = out.nbytes();
    std::vector<std::vector<unsigned char>> values;
    for (const Tensor& t : operands) {
      values.emplace_back(bytes);
      if (bytes)
        hal::detail::read_now(values.back().data(), t.storage().impl(), byte_offset(t), bytes);
    }
    compute(values);
    if (bytes)
      hal::detail::write_now(out.storage().impl(), byte_offset(out), values.front().data(), bytes);
  });
  return out;
}

}  // namespace

Tensor elements(const Tensor& flat, int64_t begin, int64_t end) {
  return flat.slice(0, begin, end);
}

int64_t chunk_begin(int64_t count, int64_t parts, int64_t c) {
  // The first count % parts chunks hold one element more; no product that could overflow.
  return count / parts * c + std::min(c, count % parts);
}

const Event& mark(Lane& lane) {
  lane.last = lane.stream.record();
  return lane.last;
}

void follow(Lane& lane, const Lane& other) {
  if (&lane == &other) return;
  lane.stream.wait(other.last ? other.last : other.ready);
}

void copy_into(Lane& lane, const Tensor& dst, const Tensor& src) {
  copy_into(lane.stream, dst, src);
}

void copy_into(Stream& stream, const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0 || same_memory(dst, src)) return;
  stream.copy(dst.storage(), src.storage(), dst.nbytes(), byte_offset(dst), byte_offset(src));
}

Tensor reduce_pair(Lane& lane, const Tensor& a, const Tensor& b, ReduceOp op) {
  const char* name = op_name(op, a.dtype());
  if (a.numel() > 0 && supports_op(lane.device, name, a.dtype())) {
    Tensor out = device_op(name, a, b, lane.stream);
    if (out.dtype() == a.dtype()) return out;
  }
  const DType dtype = a.dtype();
  const size_t count = static_cast<size_t>(a.numel());
  return on_host(lane, {a, b}, [dtype, op, count](std::vector<std::vector<unsigned char>>& v) {
    reduce_into(dtype, op, v[0].data(), v[1].data(), count);
  });
}

Tensor divide(Lane& lane, const Tensor& t, int ranks) {
  if (t.numel() > 0 && supports_op(lane.device, "div", t.dtype())) {
    Tensor divisor = full({1}, static_cast<double>(ranks), t.dtype(), lane.stream);
    Tensor out = div(t, divisor, lane.stream);
    if (out.dtype() == t.dtype()) return out;
  }
  const DType dtype = t.dtype();
  const size_t count = static_cast<size_t>(t.numel());
  return on_host(lane, {t}, [dtype, count, ranks](std::vector<std::vector<unsigned char>>& v) {
    divide_by_ranks(dtype, v[0].data(), count, ranks);
  });
}

bool same_memory(const Tensor& a, const Tensor& b) {
  return a.storage().impl() == b.storage().impl() && a.offset() == b.offset() &&
         a.numel() == b.numel();
}

}  // namespace hal::dist::detail
