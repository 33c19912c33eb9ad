// The arguments of a queued launch as its task keeps them: what each one is, with buffers by
// address only, while the stream's LaunchRefs keep them alive. A trivially copyable record of
// 80 bytes where four KernelArgs take 160 and a destructor: the producer writes fewer of the
// queue's cache lines per launch, and the worker's end of the task touches none.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "hal/backend.hpp"
#include "hal/kernel.hpp"

namespace hal::cpu {

class BorrowedArgs {
 public:
  static constexpr size_t kMax = 4;

  // `args.size()` <= kMax.
  explicit BorrowedArgs(std::span<const KernelArg> args)
      : size_(static_cast<uint8_t>(args.size())) {
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelArg& arg = args[i];
      kinds_[i] = arg.kind();
      switch (arg.kind()) {
        case KernelArg::Kind::buffer:
          words_[i] = {reinterpret_cast<uintptr_t>(arg.buffer().impl().get()), arg.offset()};
          break;
        case KernelArg::Kind::local_memory:
          words_[i] = {0, arg.offset()};
          break;
        case KernelArg::Kind::scalar:
          scalar_sizes_[i] = static_cast<uint8_t>(arg.scalar_size());
          std::memcpy(&words_[i].value, arg.scalar_data(), arg.scalar_size());
          break;
      }
    }
  }

  // Calls fn(std::span<const KernelArg>) with the arguments rebuilt on this thread's stack;
  // their buffer handles own nothing (no reference count is touched).
  template <class Fn>
  void with_args(Fn&& fn) const {
    std::array<KernelArg, kMax> args;
    for (size_t i = 0; i < size_; ++i) args[i] = rebuild(i);
    fn(std::span<const KernelArg>(args.data(), size_));
  }

 private:
  struct Words {
    uint64_t value = 0;   // a buffer's BufferImpl address, or a scalar's bytes
    uint64_t offset = 0;  // a buffer's byte offset, or local memory's size
  };

  KernelArg rebuild(size_t i) const {
    const Words& words = words_[i];
    switch (kinds_[i]) {
      case KernelArg::Kind::buffer:
        return {Buffer(BufferPtr(BufferPtr(), reinterpret_cast<BufferImpl*>(words.value))),
                words.offset};
      case KernelArg::Kind::local_memory:
        return KernelArg::local_memory(words.offset);
      case KernelArg::Kind::scalar:
        break;
    }
    // A scalar is its bytes and its size: rebuilt as the unsigned type of that size.
    switch (scalar_sizes_[i]) {
      case 0:
        return KernelArg();
      case 1:
        return scalar<uint8_t>(words.value);
      case 2:
        return scalar<uint16_t>(words.value);
      case 4:
        return scalar<uint32_t>(words.value);
      default:
        return scalar<uint64_t>(words.value);
    }
  }
  template <class T>
  static KernelArg scalar(uint64_t bytes) {
    T value;
    std::memcpy(&value, &bytes, sizeof(T));
    return KernelArg(value);
  }

  std::array<Words, kMax> words_{};
  std::array<KernelArg::Kind, kMax> kinds_{};
  std::array<uint8_t, kMax> scalar_sizes_{};
  uint8_t size_;
};

static_assert(std::is_trivially_copyable_v<BorrowedArgs> &&
              std::is_trivially_destructible_v<BorrowedArgs>);

}  // namespace hal::cpu
