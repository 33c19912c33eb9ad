// Graph: the work of a stream captured once and replayed as one submission, since the launch
// overhead of many small kernels adds up (CUDA Graphs where the backend has them).
//
//   stream.begin_capture();
//   stream.launch(kernel, config, args);   // recorded, not run
//   hal::Graph graph = stream.end_capture();
//   for (...) stream.launch(graph);         // replays everything captured, in order
//
// A graph keeps the buffers and kernels it uses alive, and replays on any stream of its device.
// While a stream captures it cannot be synchronised or queried, and work that must run on the
// host (host callbacks) cannot be captured.
#pragma once

#include <cstddef>
#include <memory>

namespace hal {

class GraphImpl;
class Device;

class Graph {
 public:
  Graph() = default;
  explicit Graph(std::shared_ptr<GraphImpl> impl) : impl_(std::move(impl)) {}

  Device device() const;
  // Operations captured (kernels, copies, fills ...).
  size_t node_count() const;

  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<GraphImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<GraphImpl> impl_;
};

}  // namespace hal
