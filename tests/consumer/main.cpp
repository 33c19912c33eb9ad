// Copies through cpu:0 and prints what it found.
#include <hal/hal.hpp>

#include <cstdio>

int main() {
  hal::Device cpu = hal::device("cpu:0");
  hal::Stream stream = cpu.create_stream();
  hal::Buffer buffer = cpu.allocate(sizeof(int));
  const int in = 42;
  int out = 0;
  stream.copy_from_host(buffer, &in, sizeof in);
  stream.copy_to_host(&out, buffer, sizeof out);
  stream.synchronize();
  std::printf("consumer: %s (%s), hal %s, copy %s\n", cpu.id().c_str(), cpu.info().name.c_str(),
              std::string(hal::version()).c_str(), out == 42 ? "ok" : "WRONG");
  return out == 42 ? 0 : 1;
}
