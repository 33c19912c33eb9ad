// Pipeline: a computation split into stages on several devices, with micro-batches flowing
// through them, as in GPipe-style pipeline parallelism.
//
// Each stage has a compute stream and an inbound stream on its device. Micro-batch i's inputs
// to stage k are copied by stage k's inbound stream (peer copies where the backend has them,
// staged through pinned host memory otherwise) into one of the stage's buffers, once stage k - 1
// has produced them; stage k's compute stream waits for the copy, then runs the stage. Events
// order the streams, never the host, so stage k works on micro-batch i + 1 while stage k + 1
// works on micro-batch i and stage k + 1's inbound stream copies the next one in.
//
//   hal::Pipeline pipe({{"embed", hal::device("sim:0"), embed},
//                       {"block", hal::device("sim:1"), block},
//                       {"head", hal::device("sim:2"), head}});
//   std::vector<hal::Tensors> outputs = pipe.run(micro_batches);   // waits
//
// A stage's function enqueues its work on the stream it is given and returns its outputs:
//
//   [w](const hal::Tensors& in, hal::Stream& s) -> hal::Tensors {
//     return {hal::relu(hal::matmul(in[0], w, s), s)};
//   }
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hal/device.hpp"
#include "hal/event.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"

namespace hal {

using Tensors = std::vector<Tensor>;

// One stage. `run` enqueues the stage's work for one micro-batch on `stream` (a stream of
// `device`) and returns the outputs, which become the next stage's inputs. Its inputs are the
// previous stage's outputs (the micro-batch itself for the first stage), on `device` or
// wherever they already were when on no other. It is called on the thread that submits, one call
// at a time per pipeline, and must only enqueue: a stage that waits for its stream stalls the
// pipeline.
struct PipelineStage {
  std::string name;
  Device device;
  std::function<Tensors(const Tensors& inputs, Stream& stream)> run;
};

struct PipelineOptions {
  // Micro-batches whose inputs each stage holds at once: 2 is double buffering (the copy of
  // micro-batch i + 1 into a stage overlaps the stage's work on micro-batch i). A stage also
  // waits for the next one to take its outputs of micro-batch i - buffers before it makes those
  // of micro-batch i, and submitting micro-batch i waits until the first stage is done with
  // micro-batch i - buffers x stages: this bounds the micro-batches in flight. At least 1.
  size_t buffers = 2;
};

// A micro-batch once submitted: its outputs, from the last stage, are complete once `done` is
// (on the host: done.synchronize(); on a stream: stream.wait(done)).
struct PipelineTicket {
  size_t index = 0;  // in submission order, from 0
  Tensors outputs;
  Event done;
};

// Thread-safe: many threads may submit; each micro-batch goes through the stages whole, in
// the order in which the submits took their turn.
class Pipeline {
 public:
  // InvalidArgument naming the stage for no stages, a stage without a device or a function,
  // and for buffers = 0. Makes each stage's two streams.
  explicit Pipeline(std::vector<PipelineStage> stages, PipelineOptions options = {});
  ~Pipeline();  // waits for the work in flight; failures found then are dropped
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Enqueues one micro-batch and returns without waiting for it (but for room in the pipeline,
  // see PipelineOptions::buffers). Its inputs may be on any device, contiguous where they are not
  // on the first stage's; `ready`, when given, is an event the inputs' producer recorded, waited
  // for before they are read. A hal::Error from a stage's function, or from the copies and
  // waits around it, is rethrown with its code and a message naming the stage, its device and
  // the micro-batch ("pipeline stage 1 'block' on sim:1, micro-batch 5: ..."); the pipeline
  // stays usable. Another exception from a stage's function passes through unchanged.
  PipelineTicket submit(const Tensors& inputs, const Event& ready = {});

  // Submits each micro-batch in turn, waits for all of them, and returns their outputs in
  // order. On a failure, what was submitted is waited for before the error is thrown.
  std::vector<Tensors> run(const std::vector<Tensors>& micro_batches);

  // Waits for everything submitted so far on every stage's streams; the first failure found
  // (AsyncFailure, DeviceLost ...) is thrown with the stage named, after every stream was waited
  // for.
  void synchronize();

  size_t size() const;                         // the number of stages
  const PipelineStage& stage(size_t k) const;  // OutOfRange past the last
  Stream stream(size_t k) const;               // stage k's compute stream; OutOfRange past the last

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hal
