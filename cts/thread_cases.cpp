// threads.*: a device used from many threads at once: allocations, streams, a shared stream,
// and ops.
#include <atomic>
#include <mutex>
#include <thread>

#include "case.hpp"
#include "hal/ops.hpp"

namespace hal::cts {
namespace {

constexpr int kThreads = 8;

// Runs body(t) on kThreads threads and fails with the first failure any of them saw.
void on_threads(const std::function<void(int)>& body) {
  std::mutex mutex;
  std::string failure;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& error) {
        std::lock_guard lock(mutex);
        if (failure.empty()) failure = "thread " + std::to_string(t) + ": " + error.what();
      }
    });
  for (std::thread& thread : threads) thread.join();
  check(failure.empty(), failure);
}

}  // namespace

void add_thread_cases(Cases& cases) {
  cases.push_back({"threads.allocate_and_free", [](const Device& d) {
                     on_threads([&](int t) {
                       for (int i = 0; i < 50; ++i) {
                         Buffer buffer = d.allocate(static_cast<size_t>(512 * (t + 1) + i));
                         check(buffer.size() == static_cast<size_t>(512 * (t + 1) + i), "size");
                       }
                     });
                   }});
  cases.push_back({"threads.a_stream_each", [](const Device& d) {
                     on_threads([&](int t) {
                       Stream stream = d.create_stream();
                       Buffer buffer = d.allocate(4096);
                       std::vector<unsigned char> in(4096, static_cast<unsigned char>(t)),
                           out(4096);
                       for (int round = 0; round < 10; ++round) {
                         stream.copy_from_host(buffer, in.data(), in.size());
                         stream.copy_to_host(out.data(), buffer, out.size());
                         stream.synchronize();
                         check(out == in, "round " + std::to_string(round));
                       }
                     });
                   }});
  cases.push_back({"threads.one_shared_stream", [](const Device& d) {
                     Stream stream = d.create_stream();
                     std::atomic<int> ran{0};
                     on_threads([&](int) {
                       for (int i = 0; i < 100; ++i) stream.host_callback([&ran] { ++ran; });
                     });
                     stream.synchronize();
                     check(ran.load() == kThreads * 100,
                           std::to_string(ran.load()) + " callbacks ran");
                   }});
  cases.push_back({"threads.ops_on_a_stream_each", [](const Device& d) {
                     {
                       Stream probe = d.create_stream();
                       unless_unsupported([&] {
                         return add(zeros({1}, DType::f32, probe), zeros({1}, DType::f32, probe),
                                    probe);
                       });
                       probe.synchronize();
                     }
                     on_threads([&](int t) {
                       Stream stream = d.create_stream();
                       for (int round = 0; round < 10; ++round) {
                         const float value = float(t * 10 + round);
                         const Tensor x = full({128}, value, DType::f32, stream);
                         const float total =
                             sum(add(x, x, stream), {}, false, stream).to_vector<float>(stream)[0];
                         check(total == 256 * value, "sum " + std::to_string(total));
                       }
                     });
                   }});
}

}  // namespace hal::cts
