// Reverse-mode automatic differentiation over hal tensors.
//
// A tensor that requires grad (Tensor::requires_grad_(), a leaf: a parameter) makes every op of
// hal/ops.hpp, and every view of Tensor, that takes it record a node on a tape: the op's name,
// edges to the nodes that made its inputs, and what its backward rule needs (saved inputs or
// outputs, without their own history). Tensor::backward(stream) walks the tape from a result in
// reverse, computing each input's gradient from the output's with hal's ops on the device that
// holds the tensors (so backward runs on every device whose op table runs the rules' ops, with
// CpuFallback where allowed), and adds the gradients of leaves into Tensor::grad().
//
// Costs: a tensor without grad carries a null pointer, and an op on such tensors pays one null
// check per input. Nothing is recorded while grad mode is off on the calling thread (NoGrad) or
// when no input requires grad. Results of integer or bool dtype never require grad (comparisons,
// argmax, casts to integers): no gradient flows through them.
//
// In-place writes: ops never write into their inputs, but an optimizer's step(), a checkpoint
// load and the collectives of hal::dist write into existing tensors' storage, and count each
// write there (Tensor::version, shared by every view; Tensor::bump_version for code that writes
// storage() itself). A node notes the count of each tensor its rule reads when it is recorded;
// backward checks every node it will run before running any, and one whose saved tensor was
// written since forward (a step() between forward and backward) is InvalidState naming the op,
// the saved input (index and name) or output, and both counts, as PyTorch's "modified by an
// inplace operation": nothing has been added into any grad(), and the graph is kept. A node
// checks again just before its rule runs, for a write by a hook of the running backward; leaves
// accumulated before that keep their gradients. The count costs a relaxed atomic increment per
// write and nothing per op.
//
// After backward the tape's saved tensors are released (BackwardOptions::retain_graph keeps
// them): a second backward through the same nodes is InvalidState naming the op. An op with no
// backward rule (floor, ceil, round, fused_elementwise) records a node that refuses backward
// with Unsupported naming the op, so a gradient is never silently zero.
//
// Threads: grad mode is per thread. Graphs may be recorded, and backward run, on many threads at
// once, sharing leaves: accumulation into a leaf's grad() is serialised by a lock (the order of
// the additions, and so the last bits of a sum, then depends on timing), and one node runs one
// backward at a time. A Tensor value itself is not locked: set requires_grad_() and read grad()
// from one thread while others may accumulate only after their backward has returned.
//
// The seam for data-parallel training: Tensor::on_grad_ready registers a hook that the engine
// calls once a leaf's gradient for this backward is complete, on the stream it was computed on,
// while the rest of backward still runs: where a gradient all-reduce would be enqueued.
#pragma once

#include <functional>

#include "hal/tensor.hpp"

namespace hal {

// Whether ops on this thread record for autograd (on by default).
bool grad_enabled();
// Sets it for this thread until it is set again (torch.set_grad_enabled); the scopes below set
// it for their lifetime.
void set_grad_enabled(bool enabled);

// Turns recording off on this thread for its scope (inference, optimizer updates); nested scopes
// restore the outer setting.
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

// Turns recording back on inside a NoGrad scope (a backward rule that differentiates a
// composite op through its parts).
class EnableGrad {
 public:
  EnableGrad();
  ~EnableGrad();
  EnableGrad(const EnableGrad&) = delete;
  EnableGrad& operator=(const EnableGrad&) = delete;

 private:
  bool previous_;
};

struct BackwardOptions {
  // Keep the saved tensors so that backward may run through the same nodes again.
  bool retain_graph = false;
};

// d(root)/d(leaf) for every leaf that `root` depends on, added into each leaf's grad().
// `grad` is d(loss)/d(root), of root's shape, dtype and device; undefined means 1, which only a
// single-element root may omit. Enqueued on `stream` (a stream of root's device); nodes on other
// devices (after Tensor::to) run on streams of their own, ordered after the gradient reached
// them, and backward returns once that work is done (a host wait), so that their gradients may
// be read on any stream of their devices. Errors: InvalidArgument for a root that does not require
// grad or a gradient of another shape, dtype or device; Unsupported naming the op for a node
// without a gradient; InvalidState naming the op when its saved tensors were released by an earlier
// backward, or when one of them was written in place after forward (In-place writes, above).
void backward(const Tensor& root, Stream& stream, const Tensor& grad = Tensor(),
              const BackwardOptions& options = {});

}  // namespace hal
