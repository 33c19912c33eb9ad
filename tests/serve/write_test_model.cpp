// Writes one of the serving tests' models to the file its first argument names, for the Python
// test of `hal serve` (test_serve_http.py): the MLP of serve_fixture.hpp; with `log`, y = Log(x)
// (NaN and infinities where x <= 0); with `half`, y = Cast(x) to FP16; both x[batch, 3] FP32.
#include <iostream>

#include "serve_fixture.hpp"

namespace {

std::string unary_bytes(const std::string& op, int32_t out_type) {
  hal::test::ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {"batch", "3"});
  b.output("y", out_type, {"batch", "3"});
  onnx::NodeProto& node = b.node(op, {"x"}, {"y"});
  if (op == "Cast") hal::test::ModelBuilder::set_int(node, "to", out_type);
  return b.bytes();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kind = argc == 3 ? argv[2] : "mlp";
  if ((argc != 2 && argc != 3) || (kind != "mlp" && kind != "log" && kind != "half")) {
    std::cerr << "usage: serve_test_model FILE.onnx [mlp|log|half]\n";
    return 2;
  }
  std::string bytes = hal::test::mlp_bytes(4, 8, 3);
  if (kind == "log") bytes = unary_bytes("Log", onnx::TensorProto::FLOAT);
  if (kind == "half") bytes = unary_bytes("Cast", onnx::TensorProto::FLOAT16);
  std::ofstream(argv[1], std::ios::binary) << bytes;
  return std::ofstream(argv[1], std::ios::app) ? 0 : 1;
}
