// The same work as hal's OpenCL backend does, written against the OpenCL API directly: the
// baseline of the dispatch suite.
#pragma once

#include "raw_baseline.hpp"

namespace hal::bench {

class RawOpenCl final : public RawBaseline {
 public:
  // The device hal calls opencl:<index> (same platform and device order, same filter).
  explicit RawOpenCl(size_t index);
  ~RawOpenCl() override;
  RawOpenCl(const RawOpenCl&) = delete;
  RawOpenCl& operator=(const RawOpenCl&) = delete;

  // clEnqueueNDRangeKernel of an empty kernel over one work item.
  void enqueue_empty() override;
  void finish() override;
  // Blocking-free write and read of `bytes` from/to host memory, then clFinish.
  void write(const void* src, size_t bytes) override;
  void read(void* dst, size_t bytes) override;

 private:
  struct State;
  State* state_;
};

}  // namespace hal::bench
