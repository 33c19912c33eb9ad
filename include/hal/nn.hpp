// hal::nn: layers of neural networks as modules over hal tensors (link hal::train).
//
// A Module owns named parameters (leaf tensors that require grad, "weight", "bias") and named
// child modules; parameters() lists them all depth-first with dotted names ("0.weight",
// "block.attention.query.weight"), PyTorch's state_dict names for the same structure, which is
// what checkpoints store (hal/checkpoint.hpp). forward() runs on the stream's device with hal's
// ops, which record for autograd while grad mode is on. Parameters are made with PyTorch's
// default initialisation, drawn from Philox with the seed given (the same values on every
// device).
//
// Modules are not copyable (their parameters are shared state); share them by reference or
// shared_ptr. A module is used from one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hal/ops.hpp"

namespace hal::nn {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& x, Stream& stream) = 0;

  // Every parameter of this module and its children, depth-first in registration order, with
  // dotted names; one a shared child holds is listed once, under its first name. The tensors
  // share storage and autograd state with the module's own.
  std::vector<NamedTensor> parameters() const;
  // The parameter named so (dotted, from this module); NotFound naming it otherwise.
  Tensor& parameter(const std::string& name);
  // Moves every parameter to `device` (a new leaf, requiring grad as it did, its gradient
  // dropped), the copies enqueued on `stream` (a stream of either device); a tensor tied into
  // several slots stays one tensor (InvalidArgument, nothing moved, where a slot holds another
  // view of a tied tensor's memory). Make optimizers after moving.
  void to(const Device& device, Stream& stream);
  // Training mode (dropout active) or evaluation mode, for this module and its children.
  void train(bool on = true);
  bool training() const { return training_; }
  // Drops every parameter's gradient (frozen ones, which do not require grad, have none).
  void zero_grad();
  // Host-side state that is not a tensor (dropout's call count), depth-first with dotted
  // names, for checkpoints; load_extra_state takes what extra_state gave.
  std::map<std::string, std::string> extra_state() const;
  void load_extra_state(const std::map<std::string, std::string>& state);

 protected:
  // A new parameter `name` holding `value`, made a leaf that requires grad.
  Tensor& register_parameter(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }
  virtual std::map<std::string, std::string> own_extra_state() const { return {}; }
  virtual void load_own_extra_state(const std::map<std::string, std::string>&) {}

 private:
  void collect(const std::string& prefix, std::vector<NamedTensor>& out) const;
  Tensor* find_parameter(const std::string& name);
  // Every parameter slot of this module and its children, with its dotted name.
  void slots(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out);
  // Stable addresses: parameter() hands out references.
  std::vector<std::pair<std::string, std::unique_ptr<Tensor>>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// y = x @ weight^T + bias; weight [out, in], bias [out], both U(-1/sqrt(in), 1/sqrt(in)). The
// bias, and an activation given to forward, go into the product's epilogue (hal::matmul with a
// MatmulEpilogue): one pass over y where the device's product takes them.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias, uint64_t seed, Stream& stream);
  Tensor forward(const Tensor& x, Stream& stream) override;
  // activation(x @ weight^T + bias): "relu", "gelu", "tanh", "sigmoid", "silu" or "".
  Tensor forward(const Tensor& x, const std::string& activation, Stream& stream);
  Tensor& weight() { return *weight_; }
  Tensor* bias() { return bias_; }

 private:
  Tensor* weight_ = nullptr;
  Tensor* bias_ = nullptr;
};

// Rows of weight [num_embeddings, dim] (N(0, 1)) at integer indices.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, uint64_t seed, Stream& stream);
  Tensor forward(const Tensor& indices, Stream& stream) override;
  Tensor& weight() { return *weight_; }

 private:
  Tensor* weight_ = nullptr;
};

// Layer norm over the trailing `shape`, weight ones and bias zeros.
class LayerNorm : public Module {
 public:
  LayerNorm(Shape shape, double eps, Stream& stream);
  Tensor forward(const Tensor& x, Stream& stream) override;

 private:
  Shape shape_;
  double eps_;
  Tensor* weight_ = nullptr;
  Tensor* bias_ = nullptr;
};

struct Conv2dOptions {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  bool bias = true;
};
// 2-d convolution, weight [out, in / groups, k, k] and bias [out], PyTorch's Conv2d default
// initialisation (U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in / groups * k * k).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, const Conv2dOptions& options,
         uint64_t seed, Stream& stream);
  Tensor forward(const Tensor& x, Stream& stream) override;

 private:
  Conv2dOptions options_;
  Tensor* weight_ = nullptr;
  Tensor* bias_ = nullptr;
};

// Inverted dropout with probability p while training, the identity in evaluation mode. Call k
// (counted from 0, kept in extra_state so that a resumed run continues the sequence) uses the
// seed mixed from `seed` and k.
class Dropout : public Module {
 public:
  Dropout(double p, uint64_t seed);
  Tensor forward(const Tensor& x, Stream& stream) override;

 protected:
  std::map<std::string, std::string> own_extra_state() const override;
  void load_own_extra_state(const std::map<std::string, std::string>& state) override;

 private:
  double p_;
  uint64_t seed_;
  uint64_t calls_ = 0;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x, Stream& stream) override { return relu(x, stream); }
};
class GELU : public Module {
 public:
  Tensor forward(const Tensor& x, Stream& stream) override { return gelu(x, stream); }
};

// Its modules in order, each fed the last one's result; named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() = default;
  template <class M>
  std::shared_ptr<M> add(std::shared_ptr<M> module) {
    layers_.push_back(module);
    return register_module(std::to_string(layers_.size() - 1), std::move(module));
  }
  Tensor forward(const Tensor& x, Stream& stream) override;

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

// Linear layers of sizes[0] -> sizes[1] -> ... with ReLU between them (none after the last),
// the layers' seeds drawn from `seed`: named "0", "1" (the ReLU), "2", ... At least two sizes.
std::shared_ptr<Sequential> make_mlp(const std::vector<int64_t>& sizes, uint64_t seed,
                                     Stream& stream);

// A pre-norm transformer block over x [batch, sequence, dim]: x + attention(ln1(x)), then
// + mlp(ln2(x)), the attention with `heads` heads (query, key, value and out projections), the
// MLP dim -> hidden -> dim with GELU, dropout after the attention and the MLP. `causal` masks
// each position from the ones after it.
struct TransformerBlockOptions {
  int64_t dim = 64, heads = 4, hidden = 256;
  double dropout = 0.0;
  bool causal = false;
};
class TransformerBlock : public Module {
 public:
  TransformerBlock(const TransformerBlockOptions& options, uint64_t seed, Stream& stream);
  Tensor forward(const Tensor& x, Stream& stream) override;

 private:
  Tensor attention(const Tensor& x, Stream& stream);
  TransformerBlockOptions options_;
  std::shared_ptr<LayerNorm> ln1_, ln2_;
  std::shared_ptr<Linear> query_, key_, value_, out_, up_, down_;
  std::shared_ptr<Dropout> drop1_, drop2_;
};

}  // namespace hal::nn
