// An all-reduce between two ranks on cpu:0 through the installed hal::dist (the local engine).
#include <hal/dist.hpp>
#include <hal/hal.hpp>

#include <cstdio>

int main() {
  const hal::Device cpu = hal::device("cpu:0");
  std::vector<hal::dist::Communicator> ranks = hal::dist::Communicator::local({cpu, cpu});
  std::vector<hal::Stream> streams = {cpu.create_stream(), cpu.create_stream()};
  std::vector<hal::Tensor> t;
  std::vector<hal::dist::Work> works;
  for (int r = 0; r < 2; ++r) t.push_back(hal::full({3}, r + 1.0, hal::DType::f32, streams[r]));
  for (int r = 0; r < 2; ++r)
    works.push_back(ranks[r].all_reduce(t[r], hal::dist::ReduceOp::sum, streams[r]));
  for (hal::dist::Work& w : works) w.wait();
  const float sum = t[1].to_vector<float>(streams[1])[2];
  std::printf("dist consumer: all_reduce %s\n", sum == 3.0f ? "ok" : "WRONG");
  return sum == 3.0f ? 0 : 1;
}
