// Training from Python: autograd on hal.Tensor (requires_grad, backward, grad, detach),
// hal.no_grad() and hal.enable_grad() scopes, hal.cross_entropy, and hal.optim's SGD, AdamW and
// clip_grad_norm_, each a thin layer over the C++ API (hal/autograd.hpp, hal/optim.hpp) with the
// GIL released while hal works.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "hal/autograd.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "hal/optim.hpp"

namespace hal::python {
namespace {

using py::arg;

// `with hal.no_grad():` and `with hal.enable_grad():`. Grad mode is per thread, as in C++ and in
// PyTorch; a with-block enters and leaves on one thread. One object is one scope at a time, as
// hal.cpu_fallback's.
class GradScope {
 public:
  explicit GradScope(bool enabled) : enabled_(enabled) {}
  void enter() {
    if (off_ || on_) throw Error(ErrorCode::InvalidState, name() + " is already entered");
    if (enabled_)
      on_ = std::make_unique<EnableGrad>();
    else
      off_ = std::make_unique<NoGrad>();
  }
  void exit() {
    off_.reset();
    on_.reset();
  }
  // `@hal.no_grad()` over a function: hal/__init__.py's wrapper (functools.wraps, generators
  // stepped in the scope) runs each call in a scope of its own.
  py::object decorate(py::function function) const {
    return py::module_::import("hal").attr("_in_grad_mode")(function, enabled_);
  }
  std::string name() const { return enabled_ ? "hal.enable_grad()" : "hal.no_grad()"; }

 private:
  bool enabled_;
  std::unique_ptr<NoGrad> off_;
  std::unique_ptr<EnableGrad> on_;
};

// hal.set_grad_enabled(mode): sets this thread's grad mode at once (a plain call), and, used as a
// with-block, puts back the mode it found when the block ends (torch.set_grad_enabled).
class SetGradEnabled {
 public:
  explicit SetGradEnabled(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
  void restore() const { set_grad_enabled(previous_); }

 private:
  bool previous_;
};

Stream& stream_of(py::handle stream, const Tensor& tensor, const char* call) {
  return given_or_current_stream(stream, tensor,
                                 [&] { return std::string(call) + " of " + tensor.describe(); });
}

// An optimizer's parameters from Python: a dict of name -> tensor, pairs of (name, tensor), or
// tensors (named "0", "1", ... by position, as a list's indices).
std::vector<optim::NamedTensor> named_parameters(py::handle parameters, const char* who) {
  std::vector<optim::NamedTensor> named;
  auto refuse = [who](py::handle item) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(who) +
                    ": a parameter must be a hal.Tensor or a (name, hal.Tensor) "
                    "pair, not " +
                    py::repr(item).cast<std::string>());
  };
  auto add = [&](py::handle name, py::handle value) {
    const Tensor* tensor = tensor_of(value);
    if (!tensor) refuse(value);
    named.push_back({py::str(name).cast<std::string>(), *tensor});
  };
  if (py::isinstance<py::dict>(parameters)) {
    for (auto [name, value] : parameters.cast<py::dict>()) add(name, value);
  } else if (tensor_of(parameters)) {
    // Iterating it would give its rows, views that are no leaves: torch.optim refuses it too.
    throw Error(ErrorCode::InvalidArgument,
                std::string(who) +
                    ": parameters must be an iterable of hal.Tensor (a list), "
                    "not one tensor " +
                    tensor_of(parameters)->describe());
  } else {
    if (!py::hasattr(parameters, "__iter__"))
      throw Error(ErrorCode::InvalidArgument,
                  std::string(who) + ": parameters must be an iterable of hal.Tensor, not " +
                      py::repr(parameters).cast<std::string>());
    size_t index = 0;
    for (py::handle item : parameters) {
      if (tensor_of(item)) {
        add(py::str(std::to_string(index)), item);
      } else if (py::isinstance<py::tuple>(item) && py::len(item) == 2 &&
                 py::isinstance<py::str>(item.cast<py::tuple>()[0])) {
        add(item.cast<py::tuple>()[0], item.cast<py::tuple>()[1]);
      } else {
        refuse(item);
      }
      ++index;
    }
  }
  if (named.empty())
    throw Error(ErrorCode::InvalidArgument, std::string(who) + ": the parameter list is empty");
  return named;
}

void bind_tensor_autograd(py::class_<Tensor>& tensor) {
  tensor
      .def_property(
          "requires_grad", &Tensor::requires_grad,
          [](Tensor& t, bool enabled) { t.requires_grad_(enabled); },
          "Whether ops on this tensor record for backward. Setting it makes a leaf (a "
          "parameter): floating dtypes only.")
      .def(
          "requires_grad_",
          [](py::object self, bool enabled) {
            self.cast<Tensor&>().requires_grad_(enabled);
            return self;
          },
          arg("requires_grad") = true, "Makes this tensor a leaf that requires grad; returns it.")
      .def_property_readonly("is_leaf", &Tensor::is_leaf, "No recorded op made this tensor.")
      .def_property_readonly(
          "grad_fn",
          [](const Tensor& t) -> py::object {
            const std::string op = t.grad_fn();
            if (op.empty()) return py::none();
            return py::str(op);
          },
          "The name of the op that made this tensor (\"matmul\"), None for a leaf.")
      .def_property(
          "grad",
          [](const Tensor& t) -> py::object {
            Tensor grad = t.grad();
            return grad.defined() ? wrap(std::move(grad)) : py::none();
          },
          [](Tensor& t, py::handle value) {
            if (value.is_none()) {
              if (t.grad().defined()) t.zero_grad();  // None clears, as `p.grad = None` in torch
              return;
            }
            const Tensor* grad = tensor_of(value);
            if (!grad)
              throw Error(ErrorCode::InvalidArgument, "grad of " + t.describe() +
                                                          " must be a hal.Tensor or None, not " +
                                                          py::repr(value).cast<std::string>());
            t.set_grad(*grad);
          },
          "The gradient backward() accumulated into this leaf; None before, or once cleared.")
      .def_property_readonly("version", &Tensor::version,
                             "Counts in-place writes into the storage (an optimizer's step), as "
                             "PyTorch's _version.")
      .def("detach", &Tensor::detach, "The same elements, without history, not requiring grad.")
      .def(
          "backward",
          [](const Tensor& t, py::handle gradient, bool retain_graph, py::handle stream_arg) {
            Stream& stream = stream_of(stream_arg, t, "backward()");
            Tensor grad;
            if (!gradient.is_none()) {
              const Tensor* given = tensor_of(gradient);
              if (!given)
                throw Error(ErrorCode::InvalidArgument,
                            "backward() of " + t.describe() + ": gradient must be a hal.Tensor, " +
                                "not " + py::repr(gradient).cast<std::string>());
              grad = *given;
            }
            py::gil_scoped_release unlocked;
            hal::backward(t, stream, grad, BackwardOptions{retain_graph});
          },
          arg("gradient") = py::none(), arg("retain_graph") = false, arg("stream") = py::none(),
          "Adds d(this)/d(leaf) into every leaf's grad; gradient is d(loss)/d(this), 1 when None "
          "(a single element only).");
}

void bind_grad_mode(py::module_& m) {
  py::class_<GradScope>(m, "GradMode", "A scope of this thread's grad mode; also a decorator.")
      .def("__enter__", &GradScope::enter)
      .def("__exit__", [](GradScope& scope, py::args) { scope.exit(); })
      .def("__call__", &GradScope::decorate, arg("function"));
  m.def(
      "no_grad", [] { return GradScope(false); },
      "`with hal.no_grad():` ops on this thread record nothing for backward.");
  m.def(
      "enable_grad", [] { return GradScope(true); },
      "`with hal.enable_grad():` ops record again inside a no_grad scope.");
  m.def("is_grad_enabled", &grad_enabled, "Whether ops on this thread record for backward.");
  py::class_<SetGradEnabled>(m, "set_grad_enabled",
                             "Sets this thread's grad mode now; as a with-block, puts the mode it "
                             "found back when the block ends.")
      .def(py::init<bool>(), arg("mode"))
      .def("__enter__", [](SetGradEnabled& self) -> SetGradEnabled& { return self; })
      .def("__exit__", [](const SetGradEnabled& self, py::args) { self.restore(); });
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& targets, int64_t ignore_index, double label_smoothing,
         py::handle stream_arg) {
        Stream& stream = stream_of(stream_arg, logits, "cross_entropy()");
        py::gil_scoped_release unlocked;
        return cross_entropy(logits, targets, ignore_index, label_smoothing, stream);
      },
      arg("logits"), arg("targets"), arg("ignore_index") = -100, arg("label_smoothing") = 0.0,
      arg("stream") = py::none(),
      "Mean cross-entropy of logits [N, C] against class indices [N], as "
      "torch.nn.functional.cross_entropy.");
}

void bind_optimizers(py::module_& m) {
  py::module_ optim = m.def_submodule(
      "optim", "Optimizers over hal tensors with PyTorch's update rules (torch.optim).");
  py::class_<optim::Optimizer>(optim, "Optimizer",
                               "Updates its parameters in place from their gradients.")
      .def(
          "step",
          [](optim::Optimizer& o, py::handle stream_arg) {
            const Tensor& first = o.parameters().front().tensor;
            if (stream_arg.is_none())
              for (const optim::NamedTensor& p : o.parameters())
                if (!(p.tensor.device() == first.device()))
                  throw Error(ErrorCode::InvalidArgument,
                              "step(): parameters on " + first.device().id() + " and " +
                                  p.tensor.device().id() + " ('" + p.name +
                                  "'): an optimizer steps the parameters of one device; make "
                                  "one optimizer per device");
            Stream& stream = stream_of(stream_arg, first, "step()");
            py::gil_scoped_release unlocked;
            o.step(stream);
          },
          arg("stream") = py::none(),
          "One update of every parameter that has a gradient, enqueued on the stream (the "
          "current one of the parameters' device when None).")
      .def("zero_grad", &optim::Optimizer::zero_grad, "Clears every parameter's grad (None).")
      .def_property("lr", &optim::Optimizer::learning_rate, &optim::Optimizer::set_learning_rate)
      .def_property_readonly("steps", &optim::Optimizer::steps)
      .def_property_readonly(
          "parameters",
          [](const optim::Optimizer& o) {
            py::list pairs;
            for (const optim::NamedTensor& p : o.parameters())
              pairs.append(py::make_tuple(p.name, p.tensor));
            return pairs;
          },
          "(name, tensor) pairs, in the order given.");
  py::class_<optim::SGD, optim::Optimizer>(optim, "SGD", "torch.optim.SGD's update.")
      .def(py::init([](py::handle parameters, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov) {
             return std::make_unique<optim::SGD>(
                 named_parameters(parameters, "hal.optim.SGD"),
                 optim::SGDOptions{lr, momentum, dampening, weight_decay, nesterov});
           }),
           arg("params"), arg("lr") = 0.01, arg("momentum") = 0.0, arg("dampening") = 0.0,
           arg("weight_decay") = 0.0, arg("nesterov") = false);
  py::class_<optim::AdamW, optim::Optimizer>(optim, "AdamW", "torch.optim.AdamW's update.")
      .def(py::init([](py::handle parameters, double lr, std::pair<double, double> betas,
                       double eps, double weight_decay) {
             return std::make_unique<optim::AdamW>(
                 named_parameters(parameters, "hal.optim.AdamW"),
                 optim::AdamWOptions{lr, betas.first, betas.second, eps, weight_decay});
           }),
           arg("params"), arg("lr") = 1e-3, arg("betas") = std::pair{0.9, 0.999}, arg("eps") = 1e-8,
           arg("weight_decay") = 1e-2);
  optim.def(
      "clip_grad_norm_",
      [](py::handle parameters, double max_norm, py::handle stream_arg) {
        std::vector<optim::NamedTensor> named =
            named_parameters(parameters, "hal.optim.clip_grad_norm_");
        Stream& stream = stream_of(stream_arg, named.front().tensor, "clip_grad_norm_()");
        py::gil_scoped_release unlocked;
        // hal reads a gradient on another device after `stream`: what this thread enqueued on
        // that device's current stream (the gradient itself, say) comes first.
        std::vector<Device> ordered{stream.device()};
        for (const optim::NamedTensor& p : named) {
          const Tensor grad = p.tensor.grad();
          if (!grad.defined() ||
              std::find(ordered.begin(), ordered.end(), grad.device()) != ordered.end())
            continue;
          ordered.push_back(grad.device());
          stream.wait(current_stream(grad.device()).record());
        }
        return optim::clip_grad_norm(named, max_norm, stream);
      },
      arg("parameters"), arg("max_norm"), arg("stream") = py::none(),
      "Scales the gradients so that their joint L2 norm is at most max_norm; returns the norm "
      "before (0-d), as torch.nn.utils.clip_grad_norm_.");
}

}  // namespace

void bind_autograd(py::module_& m, py::class_<Tensor>& tensor) {
  bind_tensor_autograd(tensor);
  bind_grad_mode(m);
  bind_optimizers(m);
}

}  // namespace hal::python
