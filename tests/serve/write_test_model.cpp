// Writes the serving tests' MLP (serve_fixture.hpp) to the file its argument names, for the
// Python test of `hal serve` (test_serve_http.py).
#include <iostream>

#include "serve_fixture.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: serve_test_model FILE.onnx\n";
    return 2;
  }
  std::ofstream(argv[1], std::ios::binary) << hal::test::mlp_bytes(4, 8, 3);
  return std::ofstream(argv[1], std::ios::app) ? 0 : 1;
}
