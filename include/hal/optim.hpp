// hal::optim: optimizers over named parameters (link hal::train), with PyTorch's update rules
// (torch.optim.SGD, torch.optim.AdamW, torch.nn.utils.clip_grad_norm_). Their state (momentum
// buffers, moment estimates) lives on each parameter's device, and step() updates the
// parameters in place (their storage is rewritten; the tensors, and references to them, stay),
// enqueued on the stream given, under NoGrad. A step is all or nothing: on the CPU (f32, f64)
// each parameter is updated by one host kernel that writes the parameter and its buffers in
// place and allocates nothing; elsewhere every new value is computed (elementwise programs, fused
// where the device has fused_elementwise) before any parameter or buffer is replaced. Either
// way a step that runs out of memory changes nothing. f16 and bf16 parameters are updated in
// f32 (their value, gradient and buffers widened, the results rounded back; the buffers stay in
// the parameter's dtype), as PyTorch computes in its opmath type: in f16 AdamW's eps is 0. A
// parameter without a gradient is skipped, as PyTorch skips one whose .grad is None. Each write
// counts on the parameter's Tensor::version, so a backward through a graph recorded before the step
// is refused (hal/autograd.hpp) rather than run at the new values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hal/nn.hpp"

namespace hal::optim {

using nn::NamedTensor;

class Optimizer {
 public:
  // The parameters (leaves that require grad, contiguous), as a module's parameters() gives.
  explicit Optimizer(std::vector<NamedTensor> parameters);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (on the stream's device).
  void step(Stream& stream);
  void zero_grad();
  const std::vector<NamedTensor>& parameters() const { return parameters_; }
  int64_t steps() const { return steps_; }
  double learning_rate() const { return lr_; }
  void set_learning_rate(double lr);

  // The state as named tensors ("<parameter>.<buffer>", e.g. "0.weight.exp_avg": the live
  // buffers, which later steps may update in place) and host values ("step", "lr", and
  // "step:<parameter>" for a parameter that took part in fewer steps), for checkpoints;
  // load_state copies exactly what state() gives (names, shapes, dtypes), or throws
  // InvalidArgument naming what differs, having changed nothing.
  std::vector<NamedTensor> state_tensors() const;
  std::map<std::string, std::string> state_values() const;
  void load_state(const std::vector<NamedTensor>& tensors,
                  const std::map<std::string, std::string>& values, Stream& stream);

 protected:
  // The buffers each parameter keeps (momentum: "momentum_buffer"; AdamW: "exp_avg",
  // "exp_avg_sq"), made as zeros on the parameter's device before the first step.
  virtual std::vector<std::string> buffer_names() const = 0;
  // The step's scalars (learning rate, decay factors ...), for a parameter's step number `step`
  // (1 for its first: steps it took no part in, without a gradient, do not count, as PyTorch's
  // per-parameter state['step']), handed to update() as 0-d views of one small tensor in the
  // parameter's dtype.
  virtual std::vector<double> constants(int64_t step) const = 0;
  // A parameter's new value and buffers from its value p, gradient g and buffers; computes,
  // changes nothing.
  struct Update {
    Tensor value;
    std::vector<Tensor> buffers;
  };
  virtual Update update(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                        const std::vector<Tensor>& constants, int64_t step,
                        Stream& stream) const = 0;
  // The same in one pass that writes p and the buffers in place (g contiguous), on devices that
  // run host kernels, in f32 and f64; it allocates nothing.
  virtual void update_in_place(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                               const std::vector<double>& constants, int64_t step,
                               Stream& stream) const = 0;

  std::vector<NamedTensor> parameters_;
  std::vector<std::vector<Tensor>> buffers_;
  std::vector<int64_t> taken_;  // per parameter: the steps it had a gradient in
  int64_t steps_ = 0;
  double lr_ = 0;
};

struct SGDOptions {
  double lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<NamedTensor> parameters, const SGDOptions& options);

 protected:
  std::vector<std::string> buffer_names() const override;
  std::vector<double> constants(int64_t step) const override;
  Update update(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                const std::vector<Tensor>& constants, int64_t step, Stream& stream) const override;
  void update_in_place(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                       const std::vector<double>& constants, int64_t step,
                       Stream& stream) const override;

 private:
  SGDOptions options_;
};

struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
};
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<NamedTensor> parameters, const AdamWOptions& options);

 protected:
  std::vector<std::string> buffer_names() const override;
  std::vector<double> constants(int64_t step) const override;
  Update update(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                const std::vector<Tensor>& constants, int64_t step, Stream& stream) const override;
  void update_in_place(const Tensor& p, const Tensor& g, const std::vector<Tensor>& buffers,
                       const std::vector<double>& constants, int64_t step,
                       Stream& stream) const override;

 private:
  AdamWOptions options_;
};

// Scales every gradient by max_norm / (norm + 1e-6) where the L2 norm of all gradients together
// exceeds max_norm. The norm and the scale are computed in f64 when a gradient is f64, in f32
// otherwise. Returns the norm before clipping as a 0-d tensor of that dtype (f32 when no
// parameter has a gradient) on the stream's device; nothing waits for it. Gradients may be on
// several devices (pipeline stages): each device's squares are summed there, and the work on
// devices other than the stream's is done when this returns (a host wait), as backward's is.
// InvalidArgument for a max_norm that is not positive.
Tensor clip_grad_norm(const std::vector<NamedTensor>& parameters, double max_norm, Stream& stream);

}  // namespace hal::optim
