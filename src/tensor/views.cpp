// Views: new shapes and strides over the same storage; nothing is copied.
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "autograd/record.hpp"
#include "core/checked_math.hpp"
#include "hal/error.hpp"
#include "hal/tensor.hpp"

namespace hal {
namespace {

// Replaces one -1 in `shape` by the size that makes it hold `count` elements.
Shape infer_size(Shape shape, int64_t count, const std::function<std::string()>& what) {
  int64_t known = 1;
  int64_t unknown = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0) throw Error(ErrorCode::InvalidArgument, what() + ": more than one -1");
      unknown = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": negative size " + std::to_string(shape[i]));
    } else {
      const auto product = detail::checked_mul(known, shape[i]);
      if (!product)
        throw Error(ErrorCode::InvalidArgument, what() +
                                                    ": the new shape has more elements "
                                                    "than int64 can count");
      known = *product;
    }
  }
  if (unknown >= 0) {
    if (known == 0 || count % known != 0)
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": no size for -1 makes " + std::to_string(count) + " elements");
    shape[static_cast<size_t>(unknown)] = count / known;
  } else if (known != count) {
    throw Error(ErrorCode::InvalidArgument, what() + ": " + std::to_string(known) +
                                                " elements in the new shape, " +
                                                std::to_string(count) + " in the tensor");
  }
  return shape;
}

// Strides for `to` over the elements of (shape, strides) in the same row-major order, or
// nothing when the old strides cannot express it: PyTorch's computeStride. Old dimensions are
// grouped into runs that are contiguous with each other; each run must map onto whole new
// dimensions.
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& to) {
  Shape out(to.size());
  // No elements, or one (a 0-d tensor): any strides address them.
  if (shape.empty() || hal::numel(shape) == 0) return contiguous_strides(to);
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t chunk_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_elements = 1, view_elements = 1;
  // The element counts are products of sizes, at most numel(); only their products with a
  // stride may overflow, and a stride that overflows int64 is one no view can have.
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_elements *= shape[static_cast<size_t>(d)];
    // At the start of a run of old dimensions (or the first): take new dimensions until the
    // run's elements are covered.
    if (d == 0 || (shape[static_cast<size_t>(d - 1)] != 1 &&
                   strides[static_cast<size_t>(d - 1)] !=
                       detail::checked_mul(tensor_elements, chunk_stride))) {
      while (view_d >= 0 &&
             (view_elements < tensor_elements || to[static_cast<size_t>(view_d)] == 1)) {
        const auto stride = detail::checked_mul(view_elements, chunk_stride);
        if (!stride) return std::nullopt;
        out[static_cast<size_t>(view_d)] = *stride;
        view_elements *= to[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_elements != tensor_elements) return std::nullopt;
      if (d > 0) {
        chunk_stride = strides[static_cast<size_t>(d - 1)];
        tensor_elements = 1;
        view_elements = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// `make`'s result, with `what` (the operation and its operands) before the message of any
// error it throws: the checks of a new shape and its strides name only those.
template <class Make>
auto naming(const std::function<std::string()>& what, const Make& make) {
  try {
    return make();
  } catch (const Error& error) {
    throw Error(error.code(), what() + ": " + error.message());
  }
}

}  // namespace

Tensor Tensor::reshape(const Shape& shape) const {
  const auto what = [&] {  // built only for an error
    return "reshape of " + describe() + " to " + to_string(shape);
  };
  const Shape to = infer_size(shape, numel(), what);
  const std::optional<Shape> strides =
      naming(what, [&] { return view_strides(shape_, strides_, to); });
  if (!strides)
    throw Error(ErrorCode::InvalidArgument,
                what() + ": the strides " + to_string(strides_) +
                    " cannot express that shape without a copy; call contiguous() first");
  Tensor out(storage_, dtype_, to, *strides, offset_);
  return requires_grad() ? autograd::record_reshape("reshape", *this, std::move(out)) : out;
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  std::vector<int64_t> order(shape_.size());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[static_cast<size_t>(wrap_dim(dim0, "transpose"))],
            order[static_cast<size_t>(wrap_dim(dim1, "transpose"))]);
  return permute(order);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  const auto what = [&] {  // built only for an error
    return "permute of " + describe() + " by " + to_string(order);
  };
  if (order.size() != shape_.size())
    throw Error(ErrorCode::InvalidArgument, what() + ": " + std::to_string(order.size()) +
                                                " dimensions given for " +
                                                std::to_string(shape_.size()));
  Shape shape(order.size()), strides(order.size());
  std::vector<bool> seen(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    const auto from = static_cast<size_t>(wrap_dim(order[i], "permute"));
    if (seen[from])
      throw Error(ErrorCode::InvalidArgument,
                  what() + ": dimension " + std::to_string(from) + " appears twice");
    seen[from] = true;
    shape[i] = shape_[from];
    strides[i] = strides_[from];
  }
  Tensor out(storage_, dtype_, std::move(shape), std::move(strides), offset_);
  return requires_grad() ? autograd::record_permute("permute", *this, order, std::move(out)) : out;
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  const auto d = static_cast<size_t>(wrap_dim(dim, "slice"));
  if (step < 1)
    throw Error(ErrorCode::InvalidArgument,
                "slice of " + describe() + ": step " + std::to_string(step) + " is not positive");
  const int64_t size = shape_[d];
  auto clamp = [size](int64_t at) {
    if (at < 0) at += size;
    return std::clamp<int64_t>(at, 0, size);
  };
  const int64_t first = clamp(start), last = std::max(clamp(end), first);
  Shape shape = shape_, strides = strides_;
  // Rounded up without adding step - 1 first, which overflows for a step near INT64_MAX.
  shape[d] = last > first ? (last - first - 1) / step + 1 : 0;
  // With two elements or more along d, step < size, so stride * step lies within the extent the
  // view reaches already; it can overflow only where the view has no elements, and for those,
  // as for one element along d, any stride will do.
  if (shape[d] > 1) strides[d] = detail::checked_mul(strides_[d], step).value_or(strides_[d]);
  // A view with elements lies inside the storage, so its offset fits; an empty one keeps its own.
  const int64_t offset = hal::numel(shape) > 0 ? offset_ + first * strides_[d] : offset_;
  Tensor out(storage_, dtype_, std::move(shape), std::move(strides), offset);
  return requires_grad()
             ? autograd::record_slice(*this, static_cast<int64_t>(d), first, step, std::move(out))
             : out;
}

Tensor Tensor::expand(const Shape& shape) const {
  const auto what = [&] {  // built only for an error
    return "expand of " + describe() + " to " + to_string(shape);
  };
  if (shape.size() < shape_.size())
    throw Error(ErrorCode::InvalidArgument, what() + ": fewer dimensions than the tensor has");
  const size_t lead = shape.size() - shape_.size();
  // A size below -1 first: the checks below would read it as a size to expand to.
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < -1)
      throw Error(ErrorCode::InvalidArgument, what() + ": size " + std::to_string(shape[i]) +
                                                  " of dimension " + std::to_string(i) +
                                                  " is negative (only -1 keeps a dimension)");
  Shape out_shape(shape.size()), out_strides(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      if (shape[i] < 0)
        throw Error(ErrorCode::InvalidArgument,
                    what() + ": new dimension " + std::to_string(i) + " cannot be -1");
      out_shape[i] = shape[i];
      continue;
    }
    const int64_t own = shape_[i - lead];
    const int64_t want = shape[i] == -1 ? own : shape[i];
    if (want == own) {
      out_shape[i] = own;
      out_strides[i] = strides_[i - lead];
    } else if (own == 1 && want >= 0) {
      out_shape[i] = want;  // stride 0: every index reads the one element
    } else {
      throw Error(ErrorCode::InvalidArgument, what() + ": dimension " + std::to_string(i) +
                                                  " has size " + std::to_string(own) +
                                                  ", which only a size of 1 may be expanded from");
    }
  }
  // Too many elements, or bytes, to count is refused by the constructor.
  Tensor out = naming(what, [&] {
    return Tensor(storage_, dtype_, std::move(out_shape), std::move(out_strides), offset_);
  });
  return requires_grad() ? autograd::record_expand(*this, std::move(out)) : out;
}

Tensor Tensor::squeeze(int64_t dim) const {
  const auto d = static_cast<size_t>(wrap_dim(dim, "squeeze"));
  if (shape_[d] != 1)
    throw Error(ErrorCode::InvalidArgument, "squeeze of " + describe() + ": dimension " +
                                                std::to_string(d) + " has size " +
                                                std::to_string(shape_[d]) + ", not 1");
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(d));
  Tensor out(storage_, dtype_, std::move(shape), std::move(strides), offset_);
  return requires_grad() ? autograd::record_reshape("squeeze", *this, std::move(out)) : out;
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  const auto d = static_cast<size_t>(wrap_dim(dim, "unsqueeze", 1));
  Shape shape = shape_, strides = strides_;
  // Any stride addresses a dimension of size 1; the one a contiguous tensor would have is
  // chosen where it fits in int64, so that contiguity is kept.
  const int64_t stride =
      d < shape_.size()
          ? detail::checked_mul(strides_[d], std::max<int64_t>(shape_[d], 1)).value_or(strides_[d])
          : int64_t{1};
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), 1);
  strides.insert(strides.begin() + static_cast<std::ptrdiff_t>(d), stride);
  Tensor out(storage_, dtype_, std::move(shape), std::move(strides), offset_);
  return requires_grad() ? autograd::record_reshape("unsqueeze", *this, std::move(out)) : out;
}

}  // namespace hal
