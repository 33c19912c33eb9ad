// A CUDA graph captured from a stream, instantiated once for replay.
#pragma once

#include <memory>
#include <vector>

#include "backends/cuda/cuda_device.hpp"

namespace hal::cuda {

class CudaGraph final : public GraphImpl {
 public:
  // Takes over `graph` and `exec`; `refs` are what the captured work uses.
  CudaGraph(std::shared_ptr<CudaDevice> device, CUgraph graph, CUgraphExec exec, size_t nodes,
            std::vector<std::shared_ptr<const void>> refs)
      : device_(std::move(device)),
        graph_(graph),
        exec_(exec),
        nodes_(nodes),
        refs_(std::move(refs)) {}
  ~CudaGraph() override {
    device_->api().cuGraphExecDestroy(exec_);
    device_->api().cuGraphDestroy(graph_);
  }

  DeviceImpl& device() const override { return *device_; }
  size_t node_count() const override { return nodes_; }
  CUgraphExec native() const { return exec_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  CUgraph graph_;
  CUgraphExec exec_;
  size_t nodes_;
  std::vector<std::shared_ptr<const void>> refs_;
};

}  // namespace hal::cuda
