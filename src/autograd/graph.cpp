// Grad mode, nodes, leaves and Tensor's autograd members.
#include "autograd/graph.hpp"

#include "autograd/record.hpp"
#include "hal/backend.hpp"
#include "hal/error.hpp"

namespace hal {
namespace {

thread_local bool grad_mode = true;

bool floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

}  // namespace

bool grad_enabled() { return grad_mode; }
void set_grad_enabled(bool enabled) { grad_mode = enabled; }

NoGrad::NoGrad() : previous_(grad_mode) { grad_mode = false; }
NoGrad::~NoGrad() { grad_mode = previous_; }
EnableGrad::EnableGrad() : previous_(grad_mode) { grad_mode = true; }
EnableGrad::~EnableGrad() { grad_mode = previous_; }

namespace autograd {

std::vector<Tensor> Node::run(const Tensor& grad, Stream& stream, bool retain) {
  const std::lock_guard lock(mutex_);
  if (released_)
    throw Error(ErrorCode::InvalidState,
                "backward through '" + std::string(op_) +
                    "' a second time: its saved tensors were released by the first backward "
                    "(pass retain_graph to the first to backpropagate twice)");
  // Again here, not only in backward()'s walk: a hook of this backward (on_grad_ready) may have
  // written a saved tensor since.
  check_saved_locked();
  std::vector<Tensor> grads = apply(grad, stream);
  if (!retain && saves()) {
    release();
    saved_.clear();
    released_ = true;
  }
  return grads;
}

void Node::check_saved() {
  if (!saves()) return;  // an accumulator: not waited for while its hooks run
  const std::lock_guard lock(mutex_);
  check_saved_locked();
}

void Node::check_saved_locked() const {
  for (const SavedVersion& saved : saved_) {
    const uint32_t now = saved.storage.impl()->version();
    if (now == saved.version) continue;
    const SavedSlot& slot = saved.slot;
    const std::string which = slot.input == kOutput
                                  ? "output (" + std::string(slot.name) + ")"
                                  : "input " + std::to_string(slot.input) + " (" +
                                        std::string(slot.name) + ") of shape " +
                                        to_string(inputs_[static_cast<size_t>(slot.input)].shape);
    throw Error(ErrorCode::InvalidState,
                "backward through '" + std::string(op_) + "': its saved " + which +
                    " was modified by an in-place write after forward (version " +
                    std::to_string(saved.version) + " when saved, " + std::to_string(now) +
                    " now): an optimizer step, a checkpoint load or another in-place write ran "
                    "between forward and backward; run backward before step(), or forward again");
  }
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<Meta> leaf, Device device, InputInfo info)
    : Node("accumulate_grad", std::move(device), {}, {std::move(info)}), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad, Stream& stream) {
  // Frozen since the graph was recorded: no gradient, no hooks (no all-reduce), as PyTorch's.
  if (leaf_->frozen.load(std::memory_order_relaxed)) return {};
  std::vector<GradHook> hooks;
  Tensor total;
  {
    const std::lock_guard lock(leaf_->mutex);
    if (leaf_->grad.defined() && leaf_->grad_stream && leaf_->grad_stream.impl() != stream.impl())
      stream.wait(leaf_->grad_stream.record());
    // A new tensor each time (ops never write in place), so a grad() handed out stays as it was;
    // the first is kept as it came, a view included.
    leaf_->grad = leaf_->grad.defined() ? add(leaf_->grad, grad, stream) : grad;
    leaf_->grad_stream = stream;
    total = leaf_->grad;
    hooks = leaf_->hooks;
  }
  for (const GradHook& hook : hooks) hook(total, stream);
  return {};
}

std::shared_ptr<Node> gradient_edge(const Tensor& t) {
  const std::shared_ptr<Meta>& meta = Access::meta(t);
  if (meta->grad_fn) return meta->grad_fn;
  const std::lock_guard lock(meta->mutex);
  std::shared_ptr<Node> accumulator = meta->accumulator.lock();
  if (!accumulator) {
    accumulator =
        std::make_shared<AccumulateGrad>(meta, t.device(), InputInfo{t.shape(), t.dtype()});
    meta->accumulator = accumulator;
  }
  return accumulator;
}

namespace {

std::shared_ptr<Node> make_node(std::string_view op, const std::vector<const Tensor*>& inputs,
                                const Tensor& out, const std::vector<SavedSlot>& saves, Rule rule) {
  std::vector<std::shared_ptr<Node>> next;
  std::vector<InputInfo> info;
  next.reserve(inputs.size());
  info.reserve(inputs.size());
  for (const Tensor* input : inputs) {
    const bool needs = input->defined() && input->requires_grad();
    next.push_back(needs ? gradient_edge(*input) : nullptr);
    info.push_back(input->defined() ? InputInfo{input->shape(), input->dtype()} : InputInfo{});
  }
  std::vector<SavedVersion> saved;
  saved.reserve(saves.size());
  for (const SavedSlot& slot : saves) {
    const Tensor& t = slot.input == kOutput ? out : *inputs[static_cast<size_t>(slot.input)];
    if (t.defined()) saved.push_back({slot, t.storage(), t.version()});  // not an absent bias
  }
  return std::make_shared<FunctionNode>(op, out.device(), std::move(next), std::move(info),
                                        std::move(saved), std::move(rule));
}

}  // namespace

Tensor attach(std::string_view op, const std::vector<const Tensor*>& inputs, Tensor out,
              const std::vector<SavedSlot>& saves, Rule rule) {
  if (!floating(out.dtype())) return out;
  auto meta = std::make_shared<Meta>();
  meta->grad_fn = make_node(op, inputs, out, saves, std::move(rule));
  Access::set_meta(out, std::move(meta));
  return out;
}

Tensor attach(std::string_view op, const std::vector<const Tensor*>& inputs, Tensor out,
              Rule rule) {
  return attach(op, inputs, std::move(out), {}, std::move(rule));
}

Tensor attach_refusal(std::string_view op, const std::vector<const Tensor*>& inputs, Tensor out,
                      std::string why) {
  return attach(op, inputs, std::move(out),
                [op, why = std::move(why)](const Tensor&, Stream&) -> std::vector<Tensor> {
                  throw Error(ErrorCode::Unsupported, "backward through '" + std::string(op) +
                                                          "': it is not differentiable (" + why +
                                                          ")");
                });
}

}  // namespace autograd

// Tensor's members.

Tensor& Tensor::requires_grad_(bool enabled) {
  if (!defined()) throw Error(ErrorCode::InvalidArgument, "requires_grad_ of an undefined tensor");
  if (!enabled) {
    if (autograd_ && autograd_->grad_fn)
      throw Error(ErrorCode::InvalidArgument,
                  "requires_grad_(false) of " + describe() + ", a result of '" + grad_fn() +
                      "': only leaves can stop requiring grad; use detach()");
    if (autograd_) autograd_->frozen.store(true, std::memory_order_relaxed);
    return *this;
  }
  if (!floating(dtype_))
    throw Error(ErrorCode::InvalidArgument,
                "requires_grad_ of " + describe() +
                    ": only floating tensors (f32, f64, f16, bf16) can require grad");
  if (autograd_)
    autograd_->frozen.store(false, std::memory_order_relaxed);
  else
    autograd_ = std::make_shared<autograd::Meta>();
  return *this;
}

bool Tensor::frozen() const { return autograd_->frozen.load(std::memory_order_relaxed); }

bool Tensor::is_leaf() const { return !autograd_ || !autograd_->grad_fn; }

std::string Tensor::grad_fn() const {
  return autograd_ && autograd_->grad_fn ? std::string(autograd_->grad_fn->op()) : std::string();
}

Tensor Tensor::grad() const {
  if (!autograd_) return Tensor();
  const std::lock_guard lock(autograd_->mutex);
  return autograd_->grad;
}

void Tensor::set_grad(const Tensor& grad) {
  if (!autograd_)
    throw Error(ErrorCode::InvalidArgument,
                "set_grad of " + describe() + ": it does not require grad (requires_grad_ first)");
  if (grad.defined() &&
      (grad.shape() != shape_ || grad.dtype() != dtype_ || !(grad.device() == device())))
    throw Error(ErrorCode::InvalidArgument, "set_grad of " + describe() + " to " + grad.describe() +
                                                ": the gradient must have the tensor's shape, "
                                                "dtype and device");
  const std::lock_guard lock(autograd_->mutex);
  autograd_->grad = grad;
}

void Tensor::on_grad_ready(std::function<void(const Tensor& grad, Stream& stream)> hook) {
  if (!autograd_ || autograd_->grad_fn)
    throw Error(ErrorCode::InvalidArgument,
                "on_grad_ready of " + describe() + ": only a leaf that requires grad has one");
  const std::lock_guard lock(autograd_->mutex);
  autograd_->hooks.push_back(std::move(hook));
}

Tensor Tensor::detach() const {
  Tensor out = *this;
  out.autograd_.reset();
  return out;
}

void Tensor::backward(Stream& stream) const { hal::backward(*this, stream); }

void Tensor::backward(Stream& stream, const Tensor& grad, bool retain_graph) const {
  hal::backward(*this, stream, grad, {retain_graph});
}

}  // namespace hal
