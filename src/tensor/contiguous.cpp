// contiguous(): a strided view gathered into new, row-major storage on the same device. The
// CPU gathers with a host kernel on its thread pool; devices that compile portable kernels
// run kernels/tensor/strided_copy; any other device is gathered through the host.
#include <algorithm>
#include <cstring>
#include <memory>

#include "autograd/record.hpp"
#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "hal/tensor.hpp"
#include "ops/host_launch.hpp"
#include "tensor/extent.hpp"
#include "tensor/host_transpose.hpp"
#include "tensor/strided_walk.hpp"

namespace hal {
namespace {

constexpr size_t kMaxKernelDims = 6;

// Dimensions that walk memory as one are merged (outer stride = inner stride * inner size),
// and size-1 ones dropped: a view of any rank usually fits the kernel's six.
void merge_dims(Shape& shape, Shape& strides) {
  Shape sizes, steps;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!sizes.empty() && steps.back() == strides[d] * shape[d]) {
      sizes.back() *= shape[d];
      steps.back() = strides[d];
    } else {
      sizes.push_back(shape[d]);
      steps.push_back(strides[d]);
    }
  }
  if (sizes.empty()) {  // one element: one dimension still, for the kernels that walk rows
    sizes.push_back(1);
    steps.push_back(0);
  }
  shape = std::move(sizes);
  strides = std::move(steps);
}

const char* unsigned_type(size_t element_size) {
  switch (element_size) {
    case 1:
      return "uchar";
    case 2:
      return "ushort";
    case 4:
      return "uint";
    default:
      return "ulong";
  }
}

void gather_with_kernel(const Tensor& in, const Tensor& out, Shape shape, Shape strides,
                        Stream& stream) {
  const Device device = in.device();
  const Kernel kernel =
      detail::compile_program(device, "tensor/strided_copy", "strided_copy",
                              {std::string("ELEMENT=") + unsigned_type(in.element_size())});
  // Leading size-1 dimensions pad the view to the kernel's six.
  shape.insert(shape.begin(), kMaxKernelDims - shape.size(), 1);
  strides.insert(strides.begin(), kMaxKernelDims - strides.size(), 0);
  std::vector<KernelArg> args{out.storage(), in.storage(), static_cast<uint64_t>(in.offset()),
                              static_cast<uint64_t>(in.numel())};
  for (int64_t size : shape) args.emplace_back(static_cast<uint64_t>(size));
  for (int64_t stride : strides) args.emplace_back(static_cast<uint64_t>(stride));
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(in.numel())), args);
}

// n elements of type T, `step` apart in `from`, packed into `to` (either may be unaligned).
template <class T>
void copy_elements(unsigned char* to, const unsigned char* from, int64_t n, int64_t step) {
  for (int64_t k = 0; k < n; ++k) {
    T value;
    std::memcpy(&value, from + k * step * static_cast<int64_t>(sizeof(T)), sizeof(T));
    std::memcpy(to + k * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
  }
}

// The tiles' units as rows of work, so that the pool splits them as it splits elements; the
// kernel runs its chunk's units.
void transpose_on_host_threads(const Tensor& in, const Tensor& out,
                               const tensor::HostTranspose& plan, Stream& stream) {
  const Kernel kernel =
      host_kernel("strided_copy", [plan, offset = static_cast<size_t>(in.offset()) *
                                                  in.element_size()](const KernelChunk& chunk) {
        plan.run(chunk.args.ptr<unsigned char>(0), chunk.args.ptr<const unsigned char>(1) + offset,
                 chunk.begin[1], chunk.end[1]);
      });
  stream.launch(kernel,
                ops::host_rows_config(static_cast<int64_t>(plan.elements_per_unit()),
                                      static_cast<int64_t>(plan.units())),
                {out.storage(), in.storage()});
}

void gather_on_host_threads(const Tensor& in, const Tensor& out, Shape shape, Shape strides,
                            Stream& stream) {
  const size_t element = in.element_size();
  if (const auto plan = tensor::HostTranspose::plan(shape, strides, element))
    return transpose_on_host_threads(in, out, *plan, stream);
  const Kernel kernel = host_kernel(
      "strided_copy", [shape = std::move(shape), strides = std::array{std::move(strides)}, element,
                       offset = in.offset()](const KernelChunk& chunk) {
        const auto* src = chunk.args.ptr<const unsigned char>(1);
        auto* dst = chunk.args.ptr<unsigned char>(0);
        // A row of the innermost dimension at a time: one memcpy where it is contiguous.
        tensor::StridedWalk<1> walk(shape, strides, {offset}, static_cast<int64_t>(chunk.begin[0]));
        const int64_t step = strides[0].back();
        for (uint64_t i = chunk.begin[0]; i < chunk.end[0];) {
          const int64_t n =
              std::min<int64_t>(walk.inner_left(), static_cast<int64_t>(chunk.end[0] - i));
          unsigned char* to = dst + i * element;
          const unsigned char* from = src + static_cast<size_t>(walk.at(0)) * element;
          if (step == 1) {
            std::memcpy(to, from, static_cast<size_t>(n) * element);
          } else if (element == 4) {
            copy_elements<uint32_t>(to, from, n, step);
          } else if (element == 8) {
            copy_elements<uint64_t>(to, from, n, step);
          } else {
            for (int64_t k = 0; k < n; ++k)
              std::memcpy(to + static_cast<size_t>(k) * element,
                          from + k * step * static_cast<int64_t>(element), element);
          }
          i += static_cast<uint64_t>(n);
          walk.advance_inner(n);
        }
      });
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(in.numel())),
                {out.storage(), in.storage()});
}

void gather_through_host(const Tensor& in, const Tensor& out, Stream& stream) {
  auto packed = std::make_shared<std::vector<unsigned char>>(in.nbytes());
  in.copy_to_host(packed->data(), stream);
  stream.copy_from_host(out.storage(), packed->data(), packed->size());
  stream.keep_until_done(packed);  // until the upload has run
}

}  // namespace

bool tensor::gathers_on_device(const Tensor& t) {
  const DeviceInfo& info = t.device().info();
  if (info.has_feature(feature::kHostKernels)) return true;
  if (!info.has_feature(feature::kPortableKernels)) return false;
  Shape shape = t.shape(), strides = t.strides();
  merge_dims(shape, strides);
  return shape.size() <= kMaxKernelDims;
}

bool tensor::copies_in_tiles(const Tensor& t) {
  if (t.is_contiguous()) return false;
  Shape shape = t.shape(), strides = t.strides();
  merge_dims(shape, strides);
  return HostTranspose::plan(shape, strides, t.element_size()).has_value();
}

Tensor Tensor::contiguous(Stream& stream) const {
  if (is_contiguous()) return *this;
  const Device device = this->device();
  if (!(stream.device() == device))
    throw Error(ErrorCode::InvalidArgument, "contiguous() of " + describe() + " on a stream of " +
                                                stream.device().id() + ": use a stream of " +
                                                device.id());
  Tensor out = empty(shape_, dtype_, device);
  Shape shape = shape_, strides = strides_;
  merge_dims(shape, strides);
  const DeviceInfo& info = device.info();
  if (info.has_feature(feature::kHostKernels))
    gather_on_host_threads(*this, out, std::move(shape), std::move(strides), stream);
  else if (info.has_feature(feature::kPortableKernels) && shape.size() <= kMaxKernelDims)
    gather_with_kernel(*this, out, std::move(shape), std::move(strides), stream);
  else
    gather_through_host(*this, out, stream);
  return requires_grad() ? autograd::record_copy("contiguous", *this, std::move(out)) : out;
}

}  // namespace hal
