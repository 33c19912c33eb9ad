#include "gradcheck.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace hal::test {
namespace {

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

Tensor upload(const std::vector<double>& values, const Shape& shape, DType dtype, Stream& s) {
  const Tensor exact = from_vector(values, shape, s);
  return dtype == DType::f64 ? exact : cast(exact, dtype, s);
}

std::vector<double> download(const Tensor& t, Stream& s) {
  const Device cpu = device("cpu:0");
  Tensor host = t.device() == cpu ? t : t.to(cpu, s);
  s.synchronize();
  Stream on_cpu = cpu.create_stream();
  return cast(host, DType::f64, on_cpu).to_vector<double>(on_cpu);
}

std::vector<Tensor> make_inputs(const GradCase& c, const std::vector<std::vector<double>>& values,
                                DType dtype, Stream& s) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& spec = c.inputs[i];
    inputs.push_back(upload(values[i], spec.shape, spec.differentiable ? dtype : spec.dtype, s));
  }
  return inputs;
}

// Fixed weights for the output's elements, in [0.5, 1.5) with random signs.
std::vector<double> output_weights(const std::string& name, int64_t count) {
  std::mt19937_64 random(std::hash<std::string>{}(name + "/weights"));
  std::uniform_real_distribution<double> magnitude(0.5, 1.5);
  std::vector<double> w(static_cast<size_t>(count));
  for (double& v : w) v = (random() & 1 ? 1 : -1) * magnitude(random);
  return w;
}

double weighted_sum(const std::vector<double>& y, const std::vector<double>& w) {
  double total = 0;
  for (size_t i = 0; i < y.size(); ++i) total += y[i] * w[i];
  return total;
}

}  // namespace

std::vector<std::vector<double>> input_values(const GradCase& c) {
  std::mt19937_64 random(std::hash<std::string>{}(c.name));
  std::vector<std::vector<double>> values;
  for (const InputSpec& spec : c.inputs) {
    std::uniform_real_distribution<double> draw(spec.low, spec.high);
    std::vector<double> v(static_cast<size_t>(numel(spec.shape)));
    for (double& x : v) x = is_floating(spec.dtype) ? draw(random) : std::floor(draw(random));
    values.push_back(std::move(v));
  }
  return values;
}

std::vector<std::vector<double>> backward_gradients(const GradCase& c, const Device& device,
                                                    DType dtype) {
  Stream s = device.create_stream();
  const auto values = input_values(c);
  std::vector<Tensor> inputs = make_inputs(c, values, dtype, s);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (c.inputs[i].differentiable) inputs[i].requires_grad_();
  const Tensor y = c.fn(inputs, s);
  const Tensor w = upload(output_weights(c.name, y.numel()), y.shape(), y.dtype(), s);
  y.backward(s, w);
  std::vector<std::vector<double>> grads;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!c.inputs[i].differentiable) continue;
    const Tensor g = inputs[i].grad();
    if (!g.defined()) {
      ADD_FAILURE() << c.name << ": input " << i << " got no gradient on " << device.id();
      grads.emplace_back(values[i].size(), 0.0);
      continue;
    }
    EXPECT_EQ(g.shape(), inputs[i].shape()) << c.name << ": input " << i;
    EXPECT_EQ(g.dtype(), inputs[i].dtype()) << c.name << ": input " << i;
    grads.push_back(download(g, s));
  }
  return grads;
}

std::vector<std::vector<double>> numeric_gradients(const GradCase& c, double h) {
  const Device cpu = device("cpu:0");
  Stream s = cpu.create_stream();
  auto values = input_values(c);
  const auto loss = [&] {
    const Tensor y = c.fn(make_inputs(c, values, DType::f64, s), s);
    return weighted_sum(download(y, s), output_weights(c.name, y.numel()));
  };
  std::vector<std::vector<double>> grads;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].differentiable) continue;
    std::vector<double> g(values[i].size());
    for (size_t k = 0; k < g.size(); ++k) {
      const double x = values[i][k], step = h * std::max(1.0, std::fabs(x));
      values[i][k] = x + step;
      const double up = loss();
      values[i][k] = x - step;
      const double down = loss();
      values[i][k] = x;
      g[k] = (up - down) / (2 * step);
    }
    grads.push_back(std::move(g));
  }
  return grads;
}

void expect_close(const std::string& what, const std::vector<std::vector<double>>& got,
                  const std::vector<std::vector<double>>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << what << ": input " << i;
    double scale = 1;
    for (double v : want[i]) scale = std::max(scale, std::fabs(v));
    int reported = 0;
    for (size_t k = 0; k < want[i].size() && reported < 5; ++k)
      if (!(std::fabs(got[i][k] - want[i][k]) <= tolerance * scale)) {
        ADD_FAILURE() << what << ": input " << i << " element " << k << " is " << got[i][k]
                      << ", expected " << want[i][k];
        ++reported;
      }
  }
}

}  // namespace hal::test
