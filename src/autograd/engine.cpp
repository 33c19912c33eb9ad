// backward(): the nodes reachable from the root, counted by how many edges lead to each, then
// run in topological order (a node once every gradient for it has been summed), each on a stream
// of its device. Streams are switched in one chain of events, so work on a second device starts
// after the gradient that reached it was made. The walk that counts also checks that no tensor a
// node saved was written in place since forward, before anything runs.
#include <deque>
#include <unordered_map>

#include "autograd/graph.hpp"
#include "core/callback_thread.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"

namespace hal {
namespace {

using autograd::Node;

// The streams of one backward: the caller's, and one per other device as it is reached. Each
// switch makes the next stream wait for what was enqueued on the last.
class Streams {
 public:
  explicit Streams(Stream& caller) : caller_(caller), last_(&caller) {}

  Stream& on(const Device& device) {
    Stream* next = nullptr;
    if (caller_.device() == device) {
      next = &caller_;
    } else {
      for (auto& [d, s] : others_)
        if (d == device) next = &s;
      if (!next) next = &others_.emplace_back(device, device.create_stream()).second;
    }
    if (next != last_) next->wait(last_->record());
    last_ = next;
    return *next;
  }
  // The caller's stream, after everything enqueued elsewhere; and the other devices' work done.
  // Their leaves' gradients (of tensors moved by to()) are read later on streams of those
  // devices that nothing would order after this backward's own: PyTorch's backward syncs each
  // device's ambient stream, and hal has none, so it waits.
  void finish() {
    if (last_ != &caller_) caller_.wait(last_->record());
    settle();
  }
  // The other devices' work done, on the way out of a failed backward too (leaves there may
  // have their gradients already); the first failure is thrown once all have been waited for.
  void settle() {
    std::exception_ptr first;
    for (auto& [device, stream] : others_) {
      try {
        stream.synchronize();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

 private:
  Stream& caller_;
  Stream* last_;
  std::deque<std::pair<Device, Stream>> others_;  // a deque: references stay valid as it grows
};

// Also checks each node's saved tensors on the way: an in-place write since forward is refused
// before any rule has run, so nothing has been added into a grad().
std::unordered_map<Node*, int> count_dependencies(Node* root) {
  std::unordered_map<Node*, int> dependencies{{root, 0}};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    node->check_saved();
    for (const std::shared_ptr<Node>& next : node->next()) {
      if (!next) continue;
      auto [at, first] = dependencies.try_emplace(next.get(), 0);
      ++at->second;
      if (first) stack.push_back(next.get());
    }
  }
  return dependencies;
}

// A rule's gradient for input `i` of `node`, checked against the input and in its dtype.
Tensor checked(const Node& node, size_t i, Tensor grad, Stream& stream) {
  const autograd::InputInfo& input = node.inputs()[i];
  if (grad.shape() != input.shape)
    throw Error(ErrorCode::Internal, "backward through '" + std::string(node.op()) +
                                         "' gave input " + std::to_string(i) + " a gradient " +
                                         grad.describe() + " for an input of shape " +
                                         to_string(input.shape));
  return grad.dtype() == input.dtype ? grad : cast(grad, input.dtype, stream);
}

void check_root(const Tensor& root, Stream& stream, const Tensor& grad) {
  if (!root.defined()) throw Error(ErrorCode::InvalidArgument, "backward of an undefined tensor");
  if (!root.requires_grad())
    throw Error(ErrorCode::InvalidArgument,
                "backward of " + root.describe() +
                    ", which does not require grad: no input of the ops that made it required "
                    "grad, or they ran under NoGrad");
  if (!(stream.device() == root.device()))
    throw Error(ErrorCode::InvalidArgument, "backward of " + root.describe() + " on a stream of " +
                                                stream.device().id() + ": use a stream of " +
                                                root.device().id());
  if (!grad.defined()) {
    if (root.numel() != 1)
      throw Error(ErrorCode::InvalidArgument,
                  "backward of " + root.describe() +
                      " without a gradient: only a single-element tensor's is implied (1); pass "
                      "d(loss)/d(tensor) of shape " +
                      to_string(root.shape()));
    return;
  }
  if (grad.shape() != root.shape() || grad.dtype() != root.dtype() ||
      !(grad.device() == root.device()))
    throw Error(ErrorCode::InvalidArgument,
                "backward of " + root.describe() + " given the gradient " + grad.describe() +
                    ": it must have the tensor's shape " + to_string(root.shape()) + ", dtype " +
                    std::string(to_string(root.dtype())) + " and device");
}

// backward from a host callback of its own stream, over a graph with nodes on other devices:
// their streams wait for work the caller's stream does after this callback, and backward waits
// for theirs (Streams::finish), so it would wait for itself, as Stream::synchronize would there.
void refuse_waiting_for_itself(const Tensor& root, const Stream& stream,
                               const std::unordered_map<Node*, int>& nodes) {
  if (!detail::RunningCallback::of(stream.impl().get())) return;
  for (const auto& [node, count] : nodes)
    if (!(node->device() == stream.device()))
      throw Error(ErrorCode::InvalidState,
                  "backward of " + root.describe() +
                      " from one of its stream's own host callbacks, through '" +
                      std::string(node->op()) + "' on " + node->device().id() +
                      ": it would wait for that device's part, which waits for this callback; "
                      "call backward outside the callback");
}

// Runs the nodes as they become ready (every gradient for them summed).
void run_ready(std::vector<std::shared_ptr<Node>>& ready,
               std::unordered_map<Node*, Tensor>& pending,
               std::unordered_map<Node*, int>& dependencies, Streams& streams,
               const BackwardOptions& options) {
  while (!ready.empty()) {
    const std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    Tensor incoming = std::move(pending[node.get()]);
    pending.erase(node.get());
    Stream& on = streams.on(node->device());
    // A node that no gradient reached (the rules gave none) passes none on.
    std::vector<Tensor> grads = incoming.defined() ? node->run(incoming, on, options.retain_graph)
                                                   : std::vector<Tensor>(node->next().size());
    if (grads.size() < node->next().size()) grads.resize(node->next().size());
    for (size_t i = 0; i < node->next().size(); ++i) {
      const std::shared_ptr<Node>& next = node->next()[i];
      if (!next) continue;
      if (grads[i].defined()) {
        Tensor g = checked(*node, i, std::move(grads[i]), on);
        Tensor& sum = pending[next.get()];
        if (!sum.defined()) {
          sum = std::move(g);
        } else {
          // Gradients that meet on another device than they were made on arrive by to().
          if (!(g.device() == sum.device())) g = g.to(sum.device(), on);
          sum = add(sum, g, streams.on(sum.device()));
        }
      }
      if (--dependencies[next.get()] == 0) ready.push_back(next);
    }
  }
}
}  // namespace

void backward(const Tensor& root, Stream& stream, const Tensor& grad,
              const BackwardOptions& options) {
  check_root(root, stream, grad);
  const NoGrad untracked;  // the rules' ops are not recorded
  const std::shared_ptr<Node> start = autograd::gradient_edge(root);
  std::unordered_map<Node*, int> dependencies = count_dependencies(start.get());
  refuse_waiting_for_itself(root, stream, dependencies);
  // The gradient summed so far for each node's output.
  std::unordered_map<Node*, Tensor> pending;
  pending[start.get()] = grad.defined() ? grad : full(root.shape(), 1.0, root.dtype(), stream);
  Streams streams(stream);
  std::vector<std::shared_ptr<Node>> ready{start};
  try {
    run_ready(ready, pending, dependencies, streams, options);
  } catch (...) {
    try {
      streams.settle();
    } catch (...) {  // the failure that stopped backward is the one to report
    }
    throw;
  }
  streams.finish();
}

}  // namespace hal
