// Convolutions on the CPU through oneDNN, run in order on the stream as a host kernel of one
// work item (oneDNN spreads each convolution over its own threads). Transposed ones are oneDNN's
// deconvolution: one primitive where hal's phases would be one convolution per phase of the
// strides, each reordering the same input into its blocked layout.
//
// oneDNN is fastest on its blocked layouts (nChw16c and the like), so the operands are declared
// with format `any` and reordered from and to hal's row-major layout around the convolution.
// The primitive for each shape is made once and kept (making one generates code); weights the
// caller declares constant are reordered once per buffer and kept while the buffer lives.
#include "backends/cpu/cpu_stream.hpp"
#include "hal/error.hpp"
#include "hal/kernel.hpp"
#include "hal/tensor.hpp"

#if HAL_HAVE_ONEDNN
#include "backends/cpu/cpu_onednn.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <optional>

namespace hal::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

using onednn::engine;

// What a convolution's primitive depends on: every size and attribute, flattened.
std::vector<int64_t> key_of(const ConvDesc& c) {
  std::vector<int64_t> key{static_cast<int64_t>(c.x_shape.size()),
                           c.groups,
                           c.bias != nullptr,
                           c.sum != nullptr,
                           c.relu,
                           c.transposed};
  for (const auto* part : {&c.x_shape, &c.w_shape, &c.y_shape, &c.strides, &c.dilations,
                           &c.pads_before, &c.pads_after})
    key.insert(key.end(), part->begin(), part->end());
  return key;
}

Tag plain_activation(size_t rank) {
  return rank == 3 ? Tag::ncw : rank == 4 ? Tag::nchw : Tag::ncdhw;
}
// hal's weights as oneDNN's dims ([G,] O, I, K... for both kinds) lie in memory: a
// convolution's [M, C/g, K...] is o before i; a transposed one's [C, M/g, K...] i before o.
Tag plain_weights(size_t rank, bool grouped, bool transposed) {
  if (transposed) {
    if (grouped) return rank == 3 ? Tag::acbd : rank == 4 ? Tag::acbde : Tag::acbdef;
    return rank == 3 ? Tag::bac : rank == 4 ? Tag::bacd : Tag::bacde;
  }
  if (grouped) return rank == 3 ? Tag::goiw : rank == 4 ? Tag::goihw : Tag::goidhw;
  return rank == 3 ? Tag::oiw : rank == 4 ? Tag::oihw : Tag::oidhw;
}

// A convolution's primitive (or a deconvolution's) with the layouts it chose and the reorders
// between them and hal's.
struct Prepared {
  dnnl::primitive primitive;
  memory::desc src, weights, dst, scratchpad;  // the primitive's
  memory::desc x_plain, w_plain, y_plain, bias;
  std::optional<dnnl::reorder> x_in, w_in, y_out, sum_in;  // sum_in: a residual into y's layout
};

std::optional<dnnl::reorder> reorder_between(const memory::desc& from, const memory::desc& to) {
  if (from == to) return std::nullopt;
  return dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
}

std::shared_ptr<const Prepared> make_prepared(const ConvDesc& c) {
  const size_t rank = c.x_shape.size();
  const auto f32 = memory::data_type::f32;
  const bool grouped = c.groups > 1;
  memory::dims w_dims(c.w_shape.begin(), c.w_shape.end());
  // oneDNN's weights are [G,] O, I, K... for both kinds: a transposed one's [C, M/g, K...]
  // becomes [M, C, K...] read in hal's order by plain_weights' tag.
  if (c.transposed) {
    w_dims[0] = c.w_shape[1] * c.groups;
    w_dims[1] = c.w_shape[0];
  }
  if (grouped) {  // [G, O/G, I/G, K...]
    w_dims[0] /= c.groups;
    w_dims[1] /= c.transposed ? c.groups : 1;
    w_dims.insert(w_dims.begin(), c.groups);
  }
  const memory::dims x_dims(c.x_shape.begin(), c.x_shape.end());
  const memory::dims y_dims(c.y_shape.begin(), c.y_shape.end());
  memory::dims dilations;  // oneDNN counts the gaps: 0 is a dense kernel
  for (int64_t d : c.dilations) dilations.push_back(d - 1);

  auto prepared = std::make_shared<Prepared>();
  prepared->x_plain = memory::desc(x_dims, f32, plain_activation(rank));
  prepared->y_plain = memory::desc(y_dims, f32, plain_activation(rank));
  prepared->w_plain = memory::desc(w_dims, f32, plain_weights(rank, grouped, c.transposed));
  if (c.bias) prepared->bias = memory::desc({c.y_shape[1]}, f32, Tag::a);

  const memory::desc x_any(x_dims, f32, Tag::any), w_any(w_dims, f32, Tag::any);
  const memory::desc y_any(y_dims, f32, Tag::any);
  const memory::dims strides(c.strides.begin(), c.strides.end());
  const memory::dims pads_before(c.pads_before.begin(), c.pads_before.end());
  const memory::dims pads_after(c.pads_after.begin(), c.pads_after.end());
  dnnl::primitive_attr attr;
  // The caller's scratchpad, so that two streams may run one primitive at once.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops post;
  if (c.sum) post.append_sum(1.0f);  // y = conv + y, y holding the residual beforehand
  if (c.relu) post.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  attr.set_post_ops(post);
  const auto chosen = [&](const auto& pd) {
    prepared->src = pd.src_desc();
    prepared->weights = pd.weights_desc();
    prepared->dst = pd.dst_desc();
    prepared->scratchpad = pd.scratchpad_desc();
  };
  if (c.transposed) {
    const dnnl::deconvolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, x_any, w_any,
        prepared->bias, y_any, strides, dilations, pads_before, pads_after);
    const dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine());
    chosen(pd);
    prepared->primitive = dnnl::deconvolution_forward(pd);
  } else {
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_auto, x_any, w_any,
        prepared->bias, y_any, strides, dilations, pads_before, pads_after);
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine());
    chosen(pd);
    prepared->primitive = dnnl::convolution_forward(pd);
  }
  prepared->x_in = reorder_between(prepared->x_plain, prepared->src);
  prepared->w_in = reorder_between(prepared->w_plain, prepared->weights);
  prepared->y_out = reorder_between(prepared->dst, prepared->y_plain);
  if (c.sum) prepared->sum_in = reorder_between(prepared->y_plain, prepared->dst);
  return prepared;
}

// Primitives by shape. Models have a few dozen shapes; the bound only stops a stream of
// distinct shapes from growing it without end.
class PrimitiveCache {
 public:
  std::shared_ptr<const Prepared> get(const ConvDesc& c) {
    std::vector<int64_t> key = key_of(c);
    if (auto found = find(key)) return found;
    const auto making = onednn::making_primitives();  // not under mutex_: making is slow
    if (auto found = find(key)) return found;  // made by another stream while this one waited
    std::shared_ptr<const Prepared> made = make_prepared(c);
    std::lock_guard lock(mutex_);
    if (entries_.size() >= kCapacity) entries_.clear();
    return entries_.emplace(std::move(key), std::move(made)).first->second;
  }

 private:
  std::shared_ptr<const Prepared> find(const std::vector<int64_t>& key) {
    std::lock_guard lock(mutex_);
    const auto found = entries_.find(key);
    return found == entries_.end() ? nullptr : found->second;
  }

  static constexpr size_t kCapacity = 512;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, std::shared_ptr<const Prepared>> entries_;
};

// Constant weights in a primitive's layout, by buffer, offset and primitive; an entry whose
// buffer has gone (or whose address another buffer now has) is made again.
class PackedWeights {
 public:
  memory get(const ConvDesc& c, const std::shared_ptr<const Prepared>& p, memory& plain) {
    const Key key{c.w.get(), c.w_offset, p.get()};
    std::lock_guard lock(mutex_);
    // Weights whose buffers have gone (a model unloaded) are let go at the next call.
    std::erase_if(entries_, [](const auto& entry) { return entry.second.buffer.expired(); });
    if (const auto found = entries_.find(key); found != entries_.end()) {
      const Entry& entry = found->second;
      const bool same_buffer = !entry.buffer.owner_before(c.w) && !c.w.owner_before(entry.buffer);
      if (same_buffer) return entry.packed;
      entries_.erase(found);
    }
    memory packed(p->weights, engine());
    dnnl::stream stream(engine());
    p->w_in->execute(stream, plain, packed);
    stream.wait();
    entries_.emplace(key, Entry{c.w, p, packed});
    return packed;
  }

 private:
  struct Key {
    const BufferImpl* buffer;
    uint64_t offset;
    const Prepared* prepared;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    std::weak_ptr<BufferImpl> buffer;
    std::shared_ptr<const Prepared> prepared;  // keeps `Key::prepared` from being reused
    memory packed;
  };
  std::mutex mutex_;
  std::map<Key, Entry> entries_;
};

// Never destroyed, as oneDNN's engine: a stream's worker may run a convolution at exit.
PrimitiveCache& primitives() {
  static auto* cache = new PrimitiveCache;
  return *cache;
}
PackedWeights& packed_weights() {
  static auto* cache = new PackedWeights;
  return *cache;
}

void run(const ConvDesc& c, const std::shared_ptr<const Prepared>& p, const KernelArgs& args) {
  const dnnl::engine& eng = engine();
  dnnl::stream stream(eng);
  memory x_plain(p->x_plain, eng, args.ptr<float>(0) + c.x_offset);
  memory w_plain(p->w_plain, eng, args.ptr<float>(1) + c.w_offset);
  memory y_plain(p->y_plain, eng, args.ptr<float>(2) + c.y_offset);

  memory x = x_plain;
  if (p->x_in) {
    x = memory(p->src, eng);
    p->x_in->execute(stream, x_plain, x);
  }
  memory w = w_plain;
  if (p->w_in && c.constant_weights) {
    w = packed_weights().get(c, p, w_plain);
  } else if (p->w_in) {
    w = memory(p->weights, eng);
    p->w_in->execute(stream, w_plain, w);
  }
  memory y = p->y_out ? memory(p->dst, eng) : y_plain;
  if (c.sum) {  // the residual where the sum post-op reads it: y itself
    const size_t sum_arg = c.bias ? 4 : 3;
    memory sum(p->y_plain, eng, args.ptr<float>(sum_arg) + c.sum_offset);
    if (p->sum_in)
      p->sum_in->execute(stream, sum, y);
    else
      std::memcpy(y.get_data_handle(), sum.get_data_handle(), p->y_plain.get_size());
  }
  std::unordered_map<int, memory> operands{{DNNL_ARG_SRC, x},
                                           {DNNL_ARG_WEIGHTS, w},
                                           {DNNL_ARG_DST, y},
                                           {DNNL_ARG_SCRATCHPAD, memory(p->scratchpad, eng)}};
  if (c.bias) operands[DNNL_ARG_BIAS] = memory(p->bias, eng, args.ptr<float>(3) + c.bias_offset);
  p->primitive.execute(stream, operands);
  if (p->y_out) p->y_out->execute(stream, y, y_plain);
  stream.wait();
}

}  // namespace

void CpuStream::convolution(const ConvDesc& desc) {
  if (desc.dtype != DType::f32) return StreamImpl::convolution(desc);
  // The primitive is made here, so that a shape oneDNN refuses is an error of this call.
  std::shared_ptr<const Prepared> prepared;
  try {
    prepared = primitives().get(desc);
  } catch (const dnnl::error& error) {
    throw Error(ErrorCode::Unsupported,
                std::string("oneDNN has no ") + (desc.transposed ? "transposed " : "") +
                    "convolution of x " + to_string(desc.x_shape) + " with weights " +
                    to_string(desc.w_shape) + " to " + to_string(desc.y_shape) + " (strides " +
                    to_string(desc.strides) + ", dilations " + to_string(desc.dilations) +
                    ", pads " + to_string(desc.pads_before) + " and " + to_string(desc.pads_after) +
                    ", groups " + std::to_string(desc.groups) + "): " + error.what());
  }
  const Kernel kernel = host_kernel("convolution", [desc, prepared](const KernelChunk& chunk) {
    run(desc, prepared, chunk.args);
  });
  std::vector<KernelArg> args{Buffer(desc.x), Buffer(desc.w), Buffer(desc.y)};
  if (desc.bias) args.emplace_back(Buffer(desc.bias));
  if (desc.sum) args.emplace_back(Buffer(desc.sum));
  launch(kernel.impl(), LaunchConfig::linear(1), args);
}

}  // namespace hal::cpu

#else  // built without oneDNN: the CPU has no convolution of its own

namespace hal::cpu {
void CpuStream::convolution(const ConvDesc& desc) { StreamImpl::convolution(desc); }
}  // namespace hal::cpu

#endif
