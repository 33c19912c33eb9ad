// What a CPU stream's queued launches use (their kernels and buffers), held by the stream
// rather than by each task: a chain of launches of one kernel on the same buffers takes one
// reference to each, not one per launch. A task that took references would make its thread
// increment each object's count and the stream's worker decrement it, and those counts' cache
// lines would cross cores on every launch.
//
// Each object is kept in a slot with the ticket of the last task that uses it; an object pushed
// out of its slot by another waits in `retired_` for its last task. The stream drops those
// whose last task has run (sweep) when its worker goes idle, every 1 024 tasks, before it
// signals an event, and in synchronize and query: not after every task, which would take and
// drop the same references again and again in a chain. So an object is released at the latest
// when the stream next rests, is synchronised or records an event after the work that uses it.
//
// Not thread-safe: the stream's lock guards it. Released references are handed back to be
// dropped after that lock (dropping a buffer may call into its allocator).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace hal::cpu {

class LaunchRefs {
 public:
  using Ref = std::shared_ptr<const void>;
  static constexpr size_t kSlots = 8;

  // Room for `holds` more calls of hold() that allocate nothing (each retires at most one
  // reference): a stream reserves before it queues a task, and holds what the task uses after,
  // when a failure could no longer undo the queueing.
  void reserve(size_t holds) {
    if (retired_.capacity() - retired_.size() < holds)
      retired_.reserve(retired_.size() + std::max(holds, retired_.size()));
  }

  // Keeps `object` until the task with `ticket` has run. Allocates only past what reserve()
  // made room for.
  template <class T>
  void hold(const std::shared_ptr<T>& object, uint64_t ticket) {
    const void* key = object.get();
    Slot* victim = &slots_[0];
    for (Slot& slot : slots_) {
      if (slot.key == key) {
        slot.ticket = ticket;  // already held: no reference taken
        return;
      }
      if (!slot.key || (victim->key && slot.ticket < victim->ticket)) victim = &slot;
    }
    if (victim->key) retired_.push_back({victim->ticket, std::move(victim->ref)});
    *victim = Slot{key, ticket, Ref(object)};
  }

  // Moves out the references whose last task (ticket <= completed) has run.
  void sweep(uint64_t completed, std::vector<Ref>& released) {
    for (Slot& slot : slots_)
      if (slot.key && slot.ticket <= completed) {
        released.push_back(std::move(slot.ref));
        slot = Slot{};
      }
    std::erase_if(retired_, [&](Retired& retired) {
      if (retired.ticket > completed) return false;
      released.push_back(std::move(retired.ref));
      return true;
    });
  }

 private:
  struct Slot {
    const void* key = nullptr;
    uint64_t ticket = 0;
    Ref ref;
  };
  struct Retired {
    uint64_t ticket;
    Ref ref;
  };
  std::array<Slot, kSlots> slots_{};
  std::vector<Retired> retired_;
};

}  // namespace hal::cpu
