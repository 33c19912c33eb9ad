// The tape: each tensor that requires grad points at its Meta; a result of a recorded op holds
// the Node that made it, whose edges lead to the nodes of the op's inputs. Leaves are reached
// through an AccumulateGrad node per leaf (cached weakly in its Meta, so that every use of a
// leaf in one backward sums into one node before the gradient is added to grad()).
//
// A node also keeps, for each tensor its rule reads, the version its storage had when the op was
// recorded (Tensor::version): an in-place write after forward moves it on, and the node then
// refuses backward rather than differentiate at the new values.
//
// Ownership runs from results to inputs only: a node holds the nodes of its inputs and its saved
// tensors stripped of their autograd state, never its own output, so the tape has no cycles and
// goes when the last result that needs it does.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hal/autograd.hpp"
#include "hal/tensor.hpp"

namespace hal::autograd {

class Node;

using GradHook = std::function<void(const Tensor& grad, Stream& stream)>;

struct Meta {
  std::shared_ptr<Node> grad_fn;  // null: a leaf
  // A leaf after requires_grad_(false): ops do not record for it, and every copy of the tensor
  // (an optimizer's, a module's) sees it, as they share this state.
  std::atomic<bool> frozen{false};
  // Leaves only.
  std::mutex mutex;  // guards grad, grad_stream, accumulator and hooks
  Tensor grad;
  // The stream the last accumulation into grad was enqueued on: one on another stream waits for
  // it first.
  Stream grad_stream;
  std::weak_ptr<Node> accumulator;
  std::vector<GradHook> hooks;
};

// What the engine checks a rule's gradient against, per input.
struct InputInfo {
  Shape shape;
  DType dtype = DType::f32;
};

// A tensor a rule reads in backward, for messages: the op's input `input` (kOutput: its output),
// and what the rule calls it ("b", "weight"; a static string).
inline constexpr int kOutput = -1;
struct SavedSlot {
  int input = kOutput;
  std::string_view name;
};

// A saved tensor's storage and its version (Tensor::version) when the op was recorded: backward
// refuses it once an in-place write has moved the version on.
struct SavedVersion {
  SavedSlot slot;
  Buffer storage;
  uint32_t version = 0;
};

class Node {
 public:
  // `op` names a static string (an op's name).
  Node(std::string_view op, Device device, std::vector<std::shared_ptr<Node>> next,
       std::vector<InputInfo> inputs, std::vector<SavedVersion> saved = {})
      : op_(op),
        device_(std::move(device)),
        next_(std::move(next)),
        inputs_(std::move(inputs)),
        saved_(std::move(saved)) {}
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  std::string_view op() const { return op_; }
  // Where the gradient of the output arrives (and the rule runs).
  const Device& device() const { return device_; }
  // One per input: the node its gradient goes to, or null for an input that needs none.
  const std::vector<std::shared_ptr<Node>>& next() const { return next_; }
  const std::vector<InputInfo>& inputs() const { return inputs_; }

  // The gradients of the inputs from that of the output, one per input (undefined where none
  // is wanted), enqueued on `stream` (of device()). Releases what it saved unless `retain`.
  // InvalidState, naming the op, after an earlier call released it, or when a tensor it saved
  // was written in place after it was recorded (check_saved).
  std::vector<Tensor> run(const Tensor& grad, Stream& stream, bool retain);
  // InvalidState naming the op, the saved tensor and its versions then and now when an in-place
  // write changed a tensor the rule reads. backward() asks every node before running any, so
  // that a refused backward has added nothing into any grad().
  void check_saved();

 protected:
  // A node that saves nothing (a leaf's accumulator) runs in any number of backwards.
  virtual bool saves() const { return true; }
  virtual std::vector<Tensor> apply(const Tensor& grad, Stream& stream) = 0;
  virtual void release() = 0;

 private:
  void check_saved_locked() const;

  std::string_view op_;
  Device device_;
  std::vector<std::shared_ptr<Node>> next_;
  std::vector<InputInfo> inputs_;
  std::mutex mutex_;  // one backward through this node at a time; guards saved_ and released_
  std::vector<SavedVersion> saved_;
  bool released_ = false;
};

using Rule = std::function<std::vector<Tensor>(const Tensor& grad, Stream& stream)>;

// A recorded op: its rule is a closure over what it saved.
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string_view op, Device device, std::vector<std::shared_ptr<Node>> next,
               std::vector<InputInfo> inputs, std::vector<SavedVersion> saved, Rule rule)
      : Node(op, std::move(device), std::move(next), std::move(inputs), std::move(saved)),
        rule_(std::move(rule)) {}

 protected:
  std::vector<Tensor> apply(const Tensor& grad, Stream& stream) override {
    return rule_(grad, stream);
  }
  void release() override { rule_ = nullptr; }

 private:
  Rule rule_;
};

// Adds the gradient into a leaf's grad() and calls its hooks.
class AccumulateGrad final : public Node {
 public:
  AccumulateGrad(std::shared_ptr<Meta> leaf, Device device, InputInfo info);

 protected:
  std::vector<Tensor> apply(const Tensor& grad, Stream& stream) override;
  void release() override {}
  bool saves() const override { return false; }

 private:
  std::shared_ptr<Meta> leaf_;
};

// Tensor's autograd state, for hal's own recording code.
class Access {
 public:
  static const std::shared_ptr<Meta>& meta(const Tensor& t) { return t.autograd_; }
  static void set_meta(Tensor& t, std::shared_ptr<Meta> meta) { t.autograd_ = std::move(meta); }
};

// The node a gradient for `t` (which requires grad) goes to: its grad_fn, or its leaf's
// accumulator (made on first use).
std::shared_ptr<Node> gradient_edge(const Tensor& t);

}  // namespace hal::autograd
