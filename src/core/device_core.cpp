#include "core/device_core.hpp"

#include <atomic>
#include <vector>

#include "core/caching_allocator.hpp"

namespace hal::detail {

DeviceCore::DeviceCore(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {
  // The allocators only keep a reference to the device: constructing them calls nothing on it.
  for (MemoryKind kind : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unified})
    allocators_[static_cast<size_t>(kind)] = std::make_shared<CachingAllocator>(*device_, kind);
}

DeviceCore::~DeviceCore() = default;

std::shared_ptr<StreamImpl> DeviceCore::transfer_stream() {
  std::lock_guard lock(mutex_);
  if (!transfer_stream_) transfer_stream_ = device_->create_stream();
  return transfer_stream_;
}

std::shared_ptr<StreamImpl> DeviceCore::borrow_stream() {
  {
    std::lock_guard lock(mutex_);
    if (!spare_streams_.empty()) {
      std::shared_ptr<StreamImpl> stream = std::move(spare_streams_.back());
      spare_streams_.pop_back();
      return stream;
    }
  }
  return device_->create_stream();
}

void DeviceCore::give_back_stream(std::shared_ptr<StreamImpl> stream) {
  // As many as threads fall back at once, within reason; a stream beyond that is destroyed
  // here, outside the lock, since destruction waits for its worker.
  constexpr size_t kMaxSpares = 16;
  std::lock_guard lock(mutex_);
  if (spare_streams_.size() < kMaxSpares) spare_streams_.push_back(std::move(stream));
}

void DeviceCore::track_stream(const std::shared_ptr<StreamImpl>& stream) {
  std::lock_guard lock(streams_mutex_);
  // Expired entries are swept once the list has doubled since the last sweep: amortised O(1).
  if (streams_.size() >= 2 * streams_pruned_at_ + 16) {
    std::erase_if(streams_, [](const std::weak_ptr<StreamImpl>& entry) { return entry.expired(); });
    streams_pruned_at_ = streams_.size();
  }
  streams_.push_back(stream);
}

std::vector<std::shared_ptr<StreamImpl>> DeviceCore::live_streams() const {
  std::vector<std::shared_ptr<StreamImpl>> live;
  std::lock_guard lock(streams_mutex_);
  live.reserve(streams_.size());
  for (const auto& entry : streams_)
    if (auto stream = entry.lock()) live.push_back(std::move(stream));
  return live;
}

std::shared_ptr<KernelImpl> DeviceCore::cached_kernel(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto found = kernels_.find(key);
  return found == kernels_.end() ? nullptr : found->second;
}

void DeviceCore::cache_kernel(const std::string& key, std::shared_ptr<KernelImpl> kernel) {
  std::lock_guard lock(mutex_);
  kernels_.emplace(key, std::move(kernel));
}

void DeviceCore::clear_kernel_cache() {
  std::unordered_map<std::string, std::shared_ptr<KernelImpl>> kernels;
  std::lock_guard lock(mutex_);
  kernels.swap(kernels_);
}

void DeviceCore::shutdown() {
  for (auto& allocator : allocators_) {
    allocator->drop_holds(true);
    allocator->empty_cache();
  }
  std::shared_ptr<StreamImpl> stream;
  std::vector<std::shared_ptr<StreamImpl>> spares;
  std::unordered_map<std::string, std::shared_ptr<KernelImpl>> kernels;
  {
    std::lock_guard lock(mutex_);
    stream.swap(transfer_stream_);
    spares.swap(spare_streams_);
    kernels.swap(kernels_);
  }
  // All are released here, outside the lock: a stream's destruction waits for its work.
}

namespace {

// Cores by device address: an open-addressing table that readers search without a lock. A key
// is published (release) after its core is stored; a full table is copied into one twice its
// size and published whole. Tables replaced are kept until exit, since a reader may still be
// searching one.
struct Slots {
  struct Entry {
    std::atomic<const DeviceImpl*> key{nullptr};
    DeviceCore* core = nullptr;  // beside its key: a lookup reads one cache line
  };
  explicit Slots(size_t capacity)
      : mask(capacity - 1), entries(std::make_unique<Entry[]>(capacity)) {}
  size_t start(const DeviceImpl* device) const {
    return (reinterpret_cast<uintptr_t>(device) >> 4) * 0x9E3779B97F4A7C15ull & mask;
  }
  DeviceCore* find(const DeviceImpl* device) const {
    for (size_t i = start(device);; i = (i + 1) & mask) {
      const DeviceImpl* key = entries[i].key.load(std::memory_order_acquire);
      if (key == device) [[likely]]
        return entries[i].core;
      if (key == nullptr) return nullptr;
    }
  }
  void insert(const DeviceImpl* device, DeviceCore* core) {
    size_t i = start(device);
    while (entries[i].key.load(std::memory_order_relaxed) != nullptr) i = (i + 1) & mask;
    entries[i].core = core;
    entries[i].key.store(device, std::memory_order_release);
    ++size;
  }
  size_t mask;
  std::unique_ptr<Entry[]> entries;
  size_t size = 0;  // written under the table's mutex
};

// The table readers search: a plain global, so that a lookup tests no initialisation guard.
constinit std::atomic<Slots*> current_slots{nullptr};

DeviceCore* find_core(const DeviceImpl* device) {
  const Slots* slots = current_slots.load(std::memory_order_acquire);
  return slots ? slots->find(device) : nullptr;
}

// Makes the cores and the tables, under a lock.
class CoreTable {
 public:
  DeviceCore& find_or_make(DeviceImpl& device) {
    std::lock_guard lock(mutex_);
    if (DeviceCore* core = find_core(&device)) return *core;
    auto core = std::make_unique<DeviceCore>(device.shared_from_this());
    DeviceCore* made = core.get();
    cores_.push_back(std::move(core));
    Slots* slots = writable();
    slots->insert(&device, made);
    return *made;
  }

  std::vector<DeviceCore*> all() {
    std::lock_guard lock(mutex_);
    std::vector<DeviceCore*> cores;
    cores.reserve(cores_.size());
    for (const auto& core : cores_) cores.push_back(core.get());
    return cores;
  }

  void shutdown() {
    std::vector<std::unique_ptr<DeviceCore>> cores;
    {
      std::lock_guard lock(mutex_);
      cores.swap(cores_);
      current_slots.store(nullptr, std::memory_order_release);
    }
    for (auto& core : cores) core->shutdown();
  }

 private:
  // The current table, or a copy twice its size when it is half full (lock held).
  Slots* writable() {
    Slots* slots = current_slots.load(std::memory_order_relaxed);
    if (slots && 2 * (slots->size + 1) <= slots->mask + 1) return slots;
    const size_t capacity = slots ? 2 * (slots->mask + 1) : 64;
    auto grown = std::make_unique<Slots>(capacity);
    if (slots)
      for (size_t i = 0; i <= slots->mask; ++i)
        if (const DeviceImpl* key = slots->entries[i].key.load(std::memory_order_relaxed))
          grown->insert(key, slots->entries[i].core);
    Slots* published = grown.get();
    tables_.push_back(std::move(grown));
    current_slots.store(published, std::memory_order_release);
    return published;
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<DeviceCore>> cores_;
  std::vector<std::unique_ptr<Slots>> tables_;  // every table published, the current one last
};

// Never destroyed: a buffer or stream released during static destruction may still need its
// device's core after every other object is gone.
CoreTable& table() {
  static auto* table = new CoreTable;
  return *table;
}

}  // namespace

DeviceCore& core_of(DeviceImpl& device) {
  if (DeviceCore* core = find_core(&device)) [[likely]]
    return *core;
  return table().find_or_make(device);
}

std::vector<DeviceCore*> device_cores() { return table().all(); }

namespace {
std::atomic<uint64_t> generation{1};
}  // namespace

void shutdown_device_cores() {
  generation.fetch_add(1);
  table().shutdown();
}

uint64_t device_generation() { return generation.load(std::memory_order_relaxed); }

}  // namespace hal::detail
