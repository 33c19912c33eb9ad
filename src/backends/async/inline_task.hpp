// A move-only void() callable that stores small callables inline: a kernel launch, a copy or
// an event signal is queued without touching the heap.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace hal::async {

template <class F, class Self>
concept TaskCallable =
    !std::is_same_v<std::decay_t<F>, Self> && std::is_invocable_v<std::decay_t<F>&>;

class InlineTask {
 public:
  // Large enough for a kernel launch with four arguments (see CpuStream::launch).
  static constexpr size_t kInlineBytes = 272;
  template <class D>
  static constexpr bool kFitsInline =
      sizeof(D) <= kInlineBytes &&
      alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;

  InlineTask() = default;
  template <TaskCallable<InlineTask> F, class D = std::decay_t<F>>
  InlineTask(F&& fn) {  // NOLINT: implicit, like std::function
    if constexpr (kFitsInline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(fn));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(fn)));
      ops_ = &kHeapOps<D>;
    }
  }
  InlineTask(InlineTask&& other) noexcept { take(other); }
  InlineTask& operator=(InlineTask&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  InlineTask& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  ~InlineTask() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->invoke(storage_); }

 private:
  struct Ops {
    void (*invoke)(void*);
    void (*move)(void* from, void* to) noexcept;
    void (*destroy)(void*) noexcept;
  };
  template <class D>
  static constexpr Ops kInlineOps{[](void* p) { (*static_cast<D*>(p))(); },
                                  [](void* from, void* to) noexcept {
                                    ::new (to) D(std::move(*static_cast<D*>(from)));
                                    static_cast<D*>(from)->~D();
                                  },
                                  [](void* p) noexcept { static_cast<D*>(p)->~D(); }};
  template <class D>
  static constexpr Ops kHeapOps{
      [](void* p) { (**static_cast<D**>(p))(); },
      [](void* from, void* to) noexcept { ::new (to) D*(*static_cast<D**>(from)); },
      [](void* p) noexcept { delete *static_cast<D**>(p); }};

  void take(InlineTask& other) noexcept {
    if (other.ops_) {
      other.ops_->move(other.storage_, storage_);
      ops_ = std::exchange(other.ops_, nullptr);
    }
  }
  void reset() noexcept {
    if (ops_) std::exchange(ops_, nullptr)->destroy(storage_);
  }

  // ops_ first: a small task and its ops fill the first cache lines of its slot, not its first
  // lines and its last.
  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
};

}  // namespace hal::async
