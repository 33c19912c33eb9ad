// Pipeline: each stage's inbound and compute streams, its ring of input buffers, and the events
// that order one stage after the previous (see include/hal/pipeline.hpp).
#include "hal/pipeline.hpp"

#include <deque>
#include <exception>
#include <mutex>

#include "core/error_context.hpp"

namespace hal {
namespace {

// One of a stage's input buffers: where the copies of one micro-batch's inputs land. The events
// are those of the slot's latest micro-batch, each recorded once: a wait on an event recorded
// again may wait for the later record (a fence across backends reads the latest, see
// PluginEvent::fence), and the later record may depend on the waiter.
struct Slot {
  Tensors inputs;  // copies on the stage's device, kept for the next micro-batch of this slot
  Event copied;    // on the inbound stream, after the copies
  Event taken;     // after the stage last needs its inputs where the previous stage left them:
                   // the copies, or the stage's work when it read any of them in place
  Event done;      // on the compute stream, after the stage's work
};

struct StageState {
  PipelineStage stage;
  Stream compute;
  Stream inbound;
  std::vector<Slot> slots;
};

std::string describe(size_t k, const PipelineStage& stage) {
  return "pipeline stage " + std::to_string(k) + " '" + stage.name + "'" +
         (stage.device ? " on " + stage.device.id() : std::string());
}

// Copies `x` into `buffer` (made anew when it cannot hold it) on `stream`. A buffer reused for a
// later micro-batch is written in place: its version moves, so that backward through an earlier
// micro-batch that saved it is refused rather than run on the later one's values.
void copy_into(Tensor& buffer, const Tensor& x, const Device& device, Stream& stream) {
  if (!buffer.defined() || buffer.dtype() != x.dtype() || buffer.shape() != x.shape())
    buffer = empty(x.shape(), x.dtype(), device);
  if (x.numel() == 0) return;
  stream.copy(buffer.storage(), x.storage(), x.nbytes(),
              static_cast<size_t>(buffer.offset()) * buffer.element_size(),
              static_cast<size_t>(x.offset()) * x.element_size());
  buffer.bump_version();
}

// Whether `x` is a view of one of the slot's buffers.
bool aliases(const Tensor& x, const Slot& slot) {
  for (const Tensor& buffer : slot.inputs)
    if (buffer.defined() && buffer.storage().impl() == x.storage().impl()) return true;
  return false;
}

// A contiguous copy of `x` in storage of its own, on `stream` (of x's device).
Tensor copy_of(const Tensor& x, Stream& stream) {
  if (!x.is_contiguous()) return x.contiguous(stream);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if (x.numel() > 0)
    stream.copy(out.storage(), x.storage(), x.nbytes(), 0,
                static_cast<size_t>(x.offset()) * x.element_size());
  return out;
}

}  // namespace

struct Pipeline::State {
  std::vector<StageState> stages;
  size_t buffers = 2;
  std::mutex mutex;  // one submit at a time: a micro-batch enters every stage in one turn
  size_t submitted = 0;
  // The first stage's event after each micro-batch not yet known to have left it, oldest first:
  // submit waits for the oldest while there are buffers x stages of them. With each stage
  // waiting for the next to take its outputs (enqueue_stage), this bounds the micro-batches in
  // flight, and so the memory of outputs enqueued but not yet consumed. (Waiting on the host at
  // each stage instead stalls: the host, held at a late stage, cannot feed the first. Waiting
  // for the last stage couples the host to every stage's lateness on the wall clock.)
  std::deque<Event> entered;

  // Enqueues stage k's share of micro-batch `index`: the copies of `inputs` that are not on the
  // stage's device into slot `index % buffers` after `ready`, then the stage. Returns its outputs
  // and, in `ready`, the event after them.
  Tensors enqueue_stage(size_t k, size_t index, const Tensors& inputs, Event& ready) {
    StageState& s = stages[k];
    Slot& slot = s.slots[index % buffers];
    Tensors in(inputs.size());
    slot.inputs.resize(inputs.size());
    bool copied = false, passed = false;
    for (size_t j = 0; j < inputs.size(); ++j) {
      const Tensor& x = inputs[j];
      if (x.device() == s.stage.device) {
        in[j] = x;
        passed = true;
        continue;
      }
      if (!x.is_contiguous())
        throw Error(ErrorCode::InvalidArgument, "input " + std::to_string(j) + " (" + x.describe() +
                                                    ") is not contiguous and not on " +
                                                    s.stage.device.id() +
                                                    "; make it contiguous on its own device first");
      if (!copied) {
        if (ready) s.inbound.wait(ready);
        if (slot.done) s.inbound.wait(slot.done);
        copied = true;
      }
      copy_into(slot.inputs[j], x, s.stage.device, s.inbound);
      in[j] = slot.inputs[j];
    }
    if (copied) {
      slot.copied = s.inbound.record();
      s.compute.wait(slot.copied);
      if (!passed) slot.taken = slot.copied;
    }
    if (ready && (passed || !copied)) s.compute.wait(ready);
    // Back-pressure: this stage's outputs of micro-batch index - buffers must have been taken
    // by the next stage before it makes more, so no stage runs ahead of a slower one below it.
    if (k + 1 < stages.size()) {
      const Event& next = stages[k + 1].slots[index % buffers].taken;
      if (next) s.compute.wait(next);
    }
    try {
      Tensors out = s.stage.run(in, s.compute);
      for (size_t j = 0; j < out.size(); ++j) {
        if (!out[j].defined())
          throw Error(ErrorCode::InvalidArgument,
                      "output " + std::to_string(j) + " of the stage's function is undefined");
        if (out[j].device() != s.stage.device) continue;
        // An output in one of the slot's buffers (an input handed back, or a view of one) is
        // copied out: the slot takes the next micro-batch while the output is still read.
        // Others are packed here, on their stream, for the next stage's whole-buffer copy.
        if (aliases(out[j], slot))
          out[j] = copy_of(out[j], s.compute);
        else if (!out[j].is_contiguous())
          out[j] = out[j].contiguous(s.compute);
      }
      slot.done = s.compute.record();
      if (passed || !copied) slot.taken = slot.done;
      ready = slot.done;
      return out;
    } catch (...) {
      // What the function enqueued before failing may still read the slot and the previous
      // stage's outputs: later copies into the slot, and that stage, wait for these records.
      try {
        const detail::ErrorReportsMuted unreported;
        slot.done = s.compute.record();
        if (passed || !copied) slot.taken = slot.done;
      } catch (const Error&) {  // a lost device: its work runs no more
      }
      throw;
    }
  }

  // The first failure of stage k's streams, waited for whole.
  void synchronize_stage(size_t k, std::exception_ptr& first) {
    for (Stream* stream : {&stages[k].inbound, &stages[k].compute}) {
      try {
        const detail::ErrorReportsMuted rewrapped;  // reported below, with the stage
        stream->synchronize();
      } catch (const Error& error) {
        if (!first)
          first = std::make_exception_ptr(
              Error(error.code(), describe(k, stages[k].stage) + ": " + error.message()));
      }
    }
  }
};

Pipeline::Pipeline(std::vector<PipelineStage> stages, PipelineOptions options)
    : state_(std::make_unique<State>()) {
  if (stages.empty())
    throw Error(ErrorCode::InvalidArgument, "pipeline: no stages; give at least one");
  // Each buffer is a slot of events per stage, made here: a count past any use is a mistake.
  constexpr size_t kMaxBuffers = 1024;
  if (options.buffers == 0 || options.buffers > kMaxBuffers)
    throw Error(ErrorCode::InvalidArgument,
                "pipeline: buffers is " + std::to_string(options.buffers) +
                    "; each stage needs 1 to " + std::to_string(kMaxBuffers) +
                    " (2 double-buffers)");
  for (size_t k = 0; k < stages.size(); ++k) {
    if (!stages[k].device)
      throw Error(ErrorCode::InvalidArgument, describe(k, stages[k]) + " has no device");
    if (!stages[k].run)
      throw Error(ErrorCode::InvalidArgument, describe(k, stages[k]) + " has no function");
  }
  state_->buffers = options.buffers;
  state_->stages.reserve(stages.size());
  for (PipelineStage& stage : stages) {
    StageState s;
    s.compute = stage.device.create_stream();
    s.inbound = stage.device.create_stream();
    s.slots.resize(options.buffers);
    s.stage = std::move(stage);
    state_->stages.push_back(std::move(s));
  }
}

Pipeline::~Pipeline() {
  std::exception_ptr dropped;
  const detail::ErrorReportsMuted unreported;
  for (size_t k = 0; k < state_->stages.size(); ++k) state_->synchronize_stage(k, dropped);
}

PipelineTicket Pipeline::submit(const Tensors& inputs, const Event& ready) {
  for (size_t j = 0; j < inputs.size(); ++j)
    if (!inputs[j].defined())
      throw Error(ErrorCode::InvalidArgument,
                  "pipeline: input " + std::to_string(j) + " of the micro-batch is undefined");
  std::lock_guard lock(state_->mutex);
  PipelineTicket ticket;
  ticket.index = state_->submitted++;
  const StageState& first = state_->stages.front();
  while (state_->entered.size() >= state_->buffers * state_->stages.size()) {
    const Event oldest = std::move(state_->entered.front());
    state_->entered.pop_front();
    try {
      const detail::ErrorReportsMuted rewrapped;  // reported below, with the stage
      oldest.synchronize();
    } catch (const Error& error) {
      const detail::ErrorContext context(first.stage.device.id(), "pipeline");
      throw Error(error.code(), describe(0, first.stage) + ", micro-batch " +
                                    std::to_string(ticket.index) +
                                    ", waiting for room: " + error.message());
    }
  }
  Event after = ready;
  Tensors current = inputs;
  for (size_t k = 0; k < state_->stages.size(); ++k) {
    const std::string where = describe(k, state_->stages[k].stage) + ", micro-batch " +
                              std::to_string(ticket.index) + ": ";
    try {
      const detail::ErrorReportsMuted rewrapped;  // reported below, with the stage
      current = state_->enqueue_stage(k, ticket.index, current, after);
      if (k == 0) state_->entered.push_back(after);  // the first stage's event after its work
    } catch (const Error& error) {
      const detail::ErrorContext context(state_->stages[k].stage.device.id(), "pipeline");
      throw Error(error.code(), where + error.message());
    }
  }
  ticket.outputs = std::move(current);
  ticket.done = after;  // the last stage's, recorded for this micro-batch alone
  return ticket;
}

std::vector<Tensors> Pipeline::run(const std::vector<Tensors>& micro_batches) {
  std::vector<Tensors> outputs;
  outputs.reserve(micro_batches.size());
  try {
    for (const Tensors& batch : micro_batches) outputs.push_back(submit(batch).outputs);
  } catch (...) {
    std::exception_ptr later;  // the submit's failure is the one to report
    for (size_t k = 0; k < state_->stages.size(); ++k) state_->synchronize_stage(k, later);
    throw;
  }
  synchronize();
  return outputs;
}

void Pipeline::synchronize() {
  std::exception_ptr first;
  for (size_t k = 0; k < state_->stages.size(); ++k) state_->synchronize_stage(k, first);
  if (first) std::rethrow_exception(first);
}

size_t Pipeline::size() const { return state_->stages.size(); }

const PipelineStage& Pipeline::stage(size_t k) const {
  if (k >= state_->stages.size())
    throw Error(ErrorCode::OutOfRange, "pipeline: no stage " + std::to_string(k) + " of " +
                                           std::to_string(state_->stages.size()));
  return state_->stages[k].stage;
}

Stream Pipeline::stream(size_t k) const {
  stage(k);  // checks k
  return state_->stages[k].compute;
}

}  // namespace hal
