// The arguments of an enqueued launch: up to four kept inline, more on the heap. Holding them
// keeps their buffers alive until the kernel has run.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "hal/kernel.hpp"

namespace hal::cpu {

class KernelArgList {
 public:
  static constexpr size_t kInline = 4;

  explicit KernelArgList(std::span<const KernelArg> args) : size_(args.size()) {
    if (args.size() <= kInline)
      std::copy(args.begin(), args.end(), inline_.begin());
    else
      heap_.assign(args.begin(), args.end());
  }
  std::span<const KernelArg> view() const {
    return size_ <= kInline ? std::span<const KernelArg>(inline_.data(), size_)
                            : std::span<const KernelArg>(heap_);
  }

 private:
  std::array<KernelArg, kInline> inline_;
  std::vector<KernelArg> heap_;
  size_t size_;
};

}  // namespace hal::cpu
