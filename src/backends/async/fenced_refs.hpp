// What a device stream's enqueued work holds (buffers, kernels, events, graphs), kept until that
// work has run.
//
// The references of consecutive commands gather in an open batch. A fence recorded on the
// stream after them (an OpenCL marker, a CUevent, a plugin's event) closes the batch every
// `refs_per_fence` references (kRefsPerFence unless the stream says otherwise) and whenever the
// stream records an event, is queried or is synchronised; a batch is dropped once its fence has
// completed. One fence per batch rather than an event per command is what keeps an enqueue
// cheap; a stream whose device has little memory fences more often, so that memory comes back
// sooner.
//
// Every backend whose driver runs work after the enqueuing call returns keeps its references
// here (OpenCL, CUDA, plugins). The CPU backend needs none: its queued work items own the
// arguments they run with.
//
// `Fences` tells what a fence is:
//   using Fence = ...;  using Status = ...;  static constexpr Status kSuccess = ...;
//   std::optional<Status> poll(Fence) const;  // nullopt while pending; else kSuccess or an error
//   void destroy(Fence) const;
//   static constexpr bool kReusable = ...;  // optional: a passed fence may be recorded again
//
// Where fences are reusable (CUevents; Fence{} is then never a fence), those that passed are
// kept as spares (up to kSpares) for the next batches, so that a busy stream does not create
// and destroy a driver object every batch; destroy_spares() (or the destructor) destroys them.
//
// A command's references come either all at once (add) or one at a time (hold, then
// end_command). hold() skips an object the open batch already holds among its latest kRecent
// references: the batch's fence comes after the new command as well, so a loop launching one
// kernel on the same buffers does no reference counting. A batch is then also closed every
// `refs_per_fence` commands, so that what the batch took before the loop, and the batches in
// flight, are still released while the loop runs.
//
// Not thread-safe: the stream's mutex guards it. Batches taken out under that lock are released
// after it (dropping a buffer may call into its allocator, and a fence's destruction into the
// driver).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace hal::async {

template <class Fences>
class FencedRefs {
 public:
  using Fence = typename Fences::Fence;
  using Status = typename Fences::Status;
  using Ref = std::shared_ptr<const void>;
  struct Batch {
    Fence fence;
    std::vector<Ref> refs;
  };
  using Batches = std::vector<Batch>;
  static constexpr size_t kRefsPerFence = 64;

  static constexpr size_t kSpares = 4;
  static constexpr size_t kRecent = 8;

  explicit FencedRefs(Fences fences, size_t refs_per_fence = kRefsPerFence)
      : fences_(fences), refs_per_fence_(refs_per_fence) {}
  ~FencedRefs() { destroy_spares(); }
  FencedRefs(const FencedRefs&) = delete;
  FencedRefs& operator=(const FencedRefs&) = delete;

  // Takes the references of one command just enqueued. Returns true when the open batch is
  // full: the stream then records a fence and close()s it.
  bool add(std::span<Ref> refs) {
    for (Ref& ref : refs) open_refs_.push_back(std::move(ref));
    ++open_commands_;
    return open_refs_.size() >= refs_per_fence_;
  }
  // Or one at a time: keeps `ref` in the open batch unless one of its latest kRecent
  // references owns the same object (compared by owner, not by address: an aliasing pointer
  // keeps nothing alive of its own); then end_command(), which returns true when the open batch
  // is full or has `refs_per_fence` commands.
  template <class T>
  void hold(const std::shared_ptr<T>& ref) {
    const size_t held = open_refs_.size();
    for (size_t i = held; i > 0 && held - i < kRecent; --i)
      if (!open_refs_[i - 1].owner_before(ref) && !ref.owner_before(open_refs_[i - 1])) return;
    open_refs_.push_back(ref);
  }
  bool end_command() {
    ++open_commands_;
    return open_refs_.size() >= refs_per_fence_ || open_commands_ >= refs_per_fence_;
  }
  // A command that holds nothing still counts: query() must fence it to know it has run.
  void add_command() { ++open_commands_; }
  bool has_open_commands() const { return open_commands_ > 0; }

  // Closes the open batch behind `fence`, recorded after its commands; the batch owns it.
  void close(Fence fence) {
    in_flight_.push_back({fence, std::move(open_refs_)});
    open_refs_.clear();
    open_refs_.reserve(refs_per_fence_);  // one allocation a batch, not one per doubling
    open_commands_ = 0;
  }

  // Moves the batches whose fences have completed into `done`, oldest first, and remembers the
  // first that ended in an error.
  void take_completed(Batches& done) {
    while (!in_flight_.empty()) {
      const std::optional<Status> status = fences_.poll(in_flight_.front().fence);
      if (!status) return;
      if (*status != Fences::kSuccess && failure_ == Fences::kSuccess) failure_ = *status;
      done.push_back(std::move(in_flight_.front()));
      in_flight_.pop_front();
      if (reusable() && *status == Fences::kSuccess && spares_.size() < kSpares) {
        spares_.push_back(done.back().fence);
        done.back().fence = Fence{};
      }
    }
  }
  bool idle() const { return in_flight_.empty(); }

  // For synchronize: every closed batch, and the open batch's references (whose commands the
  // synchronisation covers without a fence).
  void take_all(Batches& batches, std::vector<Ref>& open) {
    batches.assign(std::make_move_iterator(in_flight_.begin()),
                   std::make_move_iterator(in_flight_.end()));
    in_flight_.clear();
    open.swap(open_refs_);
    open_refs_.clear();
    open_commands_ = 0;
  }

  // The first error among `batches`' fences (once they have run), or kSuccess.
  Status first_failure(const Batches& batches) const {
    for (const Batch& batch : batches)
      if (const std::optional<Status> status = fences_.poll(batch.fence);
          status && *status != Fences::kSuccess)
        return *status;
    return Fences::kSuccess;
  }
  // The first error take_completed() found since the last call, or kSuccess.
  Status take_failure() {
    const Status failure = failure_;
    failure_ = Fences::kSuccess;
    return failure;
  }

  // Destroys the fences of `batches` (those not kept as spares) and drops their references.
  void release(Batches& batches) const {
    for (Batch& batch : batches)
      if (!reusable() || batch.fence != Fence{}) fences_.destroy(batch.fence);
    batches.clear();
  }

  // A fence that has passed, to record again; Fence{} when there is none.
  Fence take_spare() {
    if (spares_.empty()) return Fence{};
    const Fence fence = spares_.back();
    spares_.pop_back();
    return fence;
  }
  void destroy_spares() {
    for (Fence fence : spares_) fences_.destroy(fence);
    spares_.clear();
  }

 private:
  static constexpr bool reusable() {
    if constexpr (requires { Fences::kReusable; })
      return Fences::kReusable;
    else
      return false;
  }

  Fences fences_;
  size_t refs_per_fence_;
  std::vector<Ref> open_refs_;   // of the commands after the last fence
  size_t open_commands_ = 0;     // commands after the last fence
  std::deque<Batch> in_flight_;  // closed batches, oldest first
  std::vector<Fence> spares_;    // passed, to be recorded again (reusable fences only)
  Status failure_ = Fences::kSuccess;
};

}  // namespace hal::async
