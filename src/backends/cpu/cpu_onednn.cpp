#include "backends/cpu/cpu_onednn.hpp"

#if HAL_HAVE_ONEDNN

#include <omp.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace hal::cpu::onednn {
namespace {

using dnnl::memory;

// A batch of row-major matrices (rows x cols) with a leading dimension, stored transposed or
// not; a batch stride of 0 broadcasts one matrix over the batch.
memory::desc matrices(memory::data_type type, int64_t batch, int64_t rows, int64_t cols,
                      const GemmOperand& operand) {
  const int64_t count = operand.batch_stride == 0 ? 1 : batch;
  // One matrix: a batch stride past its end, so that oneDNN sees a plain layout and picks its
  // fast kernels (a stride of 0 sends it to its reference loops).
  const int64_t extent = operand.transposed ? cols * operand.ld : rows * operand.ld;
  const int64_t batch_stride = count == 1 ? extent : operand.batch_stride;
  const memory::dims dims{count, rows, cols};
  const memory::dims strides = operand.transposed ? memory::dims{batch_stride, 1, operand.ld}
                                                  : memory::dims{batch_stride, operand.ld, 1};
  return memory::desc(dims, type, strides);
}

// oneDNN's type for a floating dtype of hal's (f32, bf16, f16); `undef` otherwise.
memory::data_type data_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return memory::data_type::f32;
    case DType::bf16:
      return memory::data_type::bf16;
    case DType::f16:
      return memory::data_type::f16;
    default:
      return memory::data_type::undef;
  }
}

// oneDNN's eltwise algorithm for an activation of GemmEpilogue, with its alpha (not relu: see
// Matmul).
std::optional<std::pair<dnnl::algorithm, float>> eltwise(const std::string& activation) {
  if (activation == "gelu") return std::pair{dnnl::algorithm::eltwise_gelu_erf, 0.0f};
  if (activation == "tanh") return std::pair{dnnl::algorithm::eltwise_tanh, 0.0f};
  if (activation == "sigmoid") return std::pair{dnnl::algorithm::eltwise_logistic, 0.0f};
  if (activation == "silu") return std::pair{dnnl::algorithm::eltwise_swish, 1.0f};  // x*s(1x)
  return std::nullopt;
}

}  // namespace

const dnnl::engine& engine() {
  // Never destroyed: a stream's worker may still run a primitive while statics are destroyed.
  static const auto* cpu = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *cpu;
}

std::unique_lock<std::mutex> making_primitives() {
  static auto* making = new std::mutex;  // never destroyed: streams may make primitives at exit
  return std::unique_lock(*making);
}

OneThreadForSmall::OneThreadForSmall(double work) {
  if (work > kMaxWork) return;
  const int threads = omp_get_max_threads();
  if (threads <= 1) return;
  previous_ = threads;
  omp_set_num_threads(1);
}

OneThreadForSmall::~OneThreadForSmall() {
  if (previous_ > 0) omp_set_num_threads(previous_);
}

double gemm_work(const GemmDesc& g) {
  return static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
         static_cast<double>(g.batch);
}

namespace {

// A thread's scratchpad for oneDNN, page-aligned as oneDNN's own, grown to the largest asked.
class Scratchpad {
 public:
  void* at_least(size_t bytes) {
    if (bytes > bytes_) {
      memory_.reset(static_cast<unsigned char*>(::operator new[](bytes, kAlignment)));
      bytes_ = bytes;
    }
    return memory_.get();
  }

 private:
  static constexpr std::align_val_t kAlignment{4096};
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete[](p, kAlignment); }
  };
  std::unique_ptr<unsigned char[], Free> memory_;
  size_t bytes_ = 0;
};

// What makes a prepared matmul: the layouts, not the buffers or their offsets.
using MatmulKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, std::array<int64_t, 6>,
                             std::array<bool, 3>, bool, std::string>;

MatmulKey key_of(const GemmDesc& g, const GemmEpilogue& e) {
  return {static_cast<int>(g.dtype),
          g.m,
          g.n,
          g.k,
          g.batch,
          {g.a.ld, g.a.batch_stride, g.b.ld, g.b.batch_stride, g.c.ld, g.c.batch_stride},
          {g.a.transposed, g.b.transposed, g.c.transposed},
          e.bias != nullptr,
          e.activation};
}

// Prepared matmuls by layout: making the primitive descriptor again took 2 us a call, a
// fifth of a small linear layer's time (oneDNN caches primitives, not their descriptors).
// Bounded: a workload of ever new shapes starts over every kMaxPrepared.
struct PreparedMatmuls {
  static constexpr size_t kMaxPrepared = 512;
  std::mutex mutex;
  std::map<MatmulKey, std::shared_ptr<const Matmul>> made;
};

PreparedMatmuls& prepared_matmuls() {
  static auto* all = new PreparedMatmuls;  // never destroyed: streams may run at exit
  return *all;
}

std::shared_ptr<const Matmul> make_matmul(const GemmDesc& g, const GemmEpilogue& e);

}  // namespace

std::shared_ptr<const Matmul> prepare_matmul(const GemmDesc& g, const GemmEpilogue& e) {
  if (data_type(g.dtype) == memory::data_type::undef) return nullptr;
  const MatmulKey key = key_of(g, e);
  PreparedMatmuls& all = prepared_matmuls();
  const auto find = [&]() -> std::optional<std::shared_ptr<const Matmul>> {
    std::lock_guard lock(all.mutex);
    if (auto found = all.made.find(key); found != all.made.end()) return found->second;
    return std::nullopt;
  };
  if (auto found = find()) return *found;
  const auto making = making_primitives();
  if (auto found = find()) return *found;  // made by another stream while this one waited
  std::shared_ptr<const Matmul> made = make_matmul(g, e);  // null is remembered too
  std::lock_guard lock(all.mutex);
  if (all.made.size() >= PreparedMatmuls::kMaxPrepared) all.made.clear();
  return all.made.emplace(key, std::move(made)).first->second;
}

namespace {

std::shared_ptr<const Matmul> make_matmul(const GemmDesc& g, const GemmEpilogue& e) {
  const memory::data_type type = data_type(g.dtype);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // two streams may run it at once
    if (!e.activation.empty()) {
      const auto algorithm = eltwise(e.activation);
      if (!algorithm) return nullptr;
      dnnl::post_ops post;
      post.append_eltwise(1.0f, algorithm->first, algorithm->second, 0.0f);
      attr.set_post_ops(post);
    }
    const memory::desc a = matrices(type, g.batch, g.m, g.k, g.a);
    const memory::desc b = matrices(type, g.batch, g.k, g.n, g.b);
    const memory::desc c = matrices(type, g.batch, g.m, g.n, g.c);
    const memory::desc bias({1, 1, g.n}, type, memory::format_tag::abc);
    const dnnl::matmul::desc desc =
        e.bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c);
    const OneThreadForSmall threads(gemm_work(g));  // as run_matmul will run it
    dnnl::matmul::primitive_desc pd(desc, attr, engine());
    return std::make_shared<Matmul>(Matmul{pd, dnnl::matmul(pd)});
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

void run_matmul(const GemmDesc& g, const GemmEpilogue& e, const Matmul& p, const KernelArgs& args) {
  const dnnl::engine& eng = engine();
  // One oneDNN stream and scratchpad per thread that runs products (a CPU stream's worker),
  // made once: a scratchpad of the size oneDNN asks, grown as needed.
  thread_local dnnl::stream stream(eng);
  thread_local Scratchpad scratch;
  void* scratchpad = scratch.at_least(p.pd.scratchpad_desc().get_size());
  const size_t element = size_of(g.dtype);
  const auto at = [&](size_t arg, uint64_t offset) {
    return static_cast<void*>(args.ptr<unsigned char>(arg) + offset * element);
  };
  std::unordered_map<int, memory> operands{
      {DNNL_ARG_SRC, memory(p.pd.src_desc(), eng, at(0, g.a.offset))},
      {DNNL_ARG_WEIGHTS, memory(p.pd.weights_desc(), eng, at(1, g.b.offset))},
      {DNNL_ARG_DST, memory(p.pd.dst_desc(), eng, at(2, g.c.offset))},
      {DNNL_ARG_SCRATCHPAD, memory(p.pd.scratchpad_desc(), eng, scratchpad)}};
  if (e.bias) operands.emplace(DNNL_ARG_BIAS, memory(p.pd.bias_desc(), eng, at(3, e.bias_offset)));
  const OneThreadForSmall threads(gemm_work(g));
  p.primitive.execute(stream, operands);
  stream.wait();
}

}  // namespace hal::cpu::onednn

#endif
