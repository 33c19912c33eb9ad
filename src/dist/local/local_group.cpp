#include "dist/local/local_group.hpp"

#include <algorithm>
#include <sstream>
#include <thread>

#include "core/error_context.hpp"
#include "dist/local/local_algorithms.hpp"
#include "hal/log.hpp"
#include "hal/units.hpp"

namespace hal::dist::detail {
namespace {

bool point_to_point(Collective kind) {
  return kind == Collective::send || kind == Collective::recv;
}

}  // namespace

// A rank's part: finished by the group (executor, failure); waiting drives the timeout.
class LocalWork final : public WorkState {
 public:
  LocalWork(Collective kind, uint64_t sequence, std::shared_ptr<LocalGroup> group,
            Clock::duration patience)
      : WorkState(kind, sequence), group_(std::move(group)), patience_(patience) {}
  void attach(std::shared_ptr<void> slot) { slot_ = std::move(slot); }

 protected:
  void drive() override;

 private:
  std::shared_ptr<LocalGroup> group_;
  std::shared_ptr<void> slot_;
  Clock::duration patience_;
};

namespace {

std::string list_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// The start of a Timeout of a full collective whose ranks' streams did not come to it.
std::string streams_behind(const std::vector<int>& ranks, const std::string& waited) {
  return "every rank joined, but the stream of rank" + std::string(ranks.size() == 1 ? " " : "s ") +
         list_ranks(ranks) + " did not reach it within " + waited + " (HAL_DIST_TIMEOUT): ";
}

// A collective's tensor as the algorithms take it: contiguous (checked) and 1-d.
Tensor flat(const Tensor& t) { return t.defined() ? t.reshape({t.numel()}) : Tensor(); }

}  // namespace

LocalGroup::LocalGroup(std::vector<Device> devices, std::string name)
    : devices_(std::move(devices)),
      name_(std::move(name)),
      link_(link_model(devices_)),
      calls_(devices_.size(), 0),
      joins_(devices_.size(), 0),
      open_holds_(devices_.size()) {}

LocalGroup::~LocalGroup() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  if (executor_.joinable()) executor_.join();
}

std::string LocalGroup::where(const Slot& slot) const {
  return std::string(to_string(slot.kind)) + " #" + std::to_string(slot.sequence) +
         " on communicator '" + name_ + "'";
}

LocalGroup::SlotPtr LocalGroup::slot_for(int rank, const CollectiveCall& call, size_t& member) {
  if (!point_to_point(call.kind)) {
    const uint64_t sequence = ++calls_[static_cast<size_t>(rank)];
    SlotPtr& slot = collectives_[sequence];
    if (!slot) {
      slot = std::make_shared<Slot>();
      slot->kind = call.kind;
      slot->sequence = sequence;
      slot->members.resize(devices_.size());
      for (int r = 0; r < size(); ++r) slot->ranks.push_back(r);
    }
    member = static_cast<size_t>(rank);
    slot->members[member].claimed = true;
    return slot;
  }
  const bool sending = call.kind == Collective::send;
  const PairKey key{sending ? rank : call.root, sending ? call.root : rank, call.tag};
  member = sending ? 0 : 1;
  std::deque<SlotPtr>& waiting = pairs_[key];
  // The oldest slot of this pair whose other side came first, else a new one.
  for (auto it = waiting.begin(); it != waiting.end(); ++it)
    if (!(*it)->members[member].claimed) {
      SlotPtr slot = *it;
      waiting.erase(it);
      if (waiting.empty()) pairs_.erase(key);
      slot->members[member].claimed = true;
      return slot;
    }
  auto slot = std::make_shared<Slot>();
  slot->kind = Collective::send;
  slot->sequence = ++pair_counts_[key];
  slot->members.resize(2);
  slot->ranks = {std::get<0>(key), std::get<1>(key)};
  slot->members[member].claimed = true;
  waiting.push_back(slot);
  return slot;
}

Work LocalGroup::join(int rank, const CollectiveCall& call) {
  const Clock::duration patience = timeout();  // a malformed setting fails the call itself
  const DebugLevel level = debug_level();
  const std::optional<AllReduceAlgorithm> algorithm = forced_local_algorithm();
  SlotPtr slot;
  size_t member = 0;
  {
    std::lock_guard lock(mutex_);
    if (broken_) std::rethrow_exception(broken_);
    slot = slot_for(rank, call, member);
  }
  Member entry;
  entry.call = call;
  entry.patience = patience;
  entry.signature = signature_of(call, slot->sequence);
  if (level == DebugLevel::detail)
    log(LogLevel::info, "hal dist: rank " + std::to_string(rank) + " of '" + name_ + "' calls " +
                            describe(entry.signature) + " as #" + std::to_string(slot->sequence));
  auto work = std::make_shared<LocalWork>(call.kind, slot->sequence, shared_from_this(), patience);
  work->attach(slot);
  entry.work = work;
  // A send copies its tensor here, in the stream's order: the stream need not wait for the
  // recv. A call that cannot enqueue (a lost device) never joins: the others time out naming it.
  if (call.kind == Collective::send && call.input.numel() > 0) {
    entry.call.input = empty(call.input.shape(), call.input.dtype(), call.input.device());
    entry.call.stream.copy(entry.call.input.storage(), call.input.storage(), call.input.nbytes(), 0,
                           static_cast<size_t>(call.input.offset()) * call.input.element_size());
  }
  const bool hold = call.kind != Collective::send;
  try {
    entry.ready = entry.call.stream.record();
    entry.call.stream.host_callback(
        [self = shared_from_this(), slot, member, patience, hold, own = call.stream.device()] {
          self->gate(slot, member, patience, hold, own);
        });
  } catch (const Error& error) {
    // A device lost before its rank could join: the others need not wait for it.
    if (error.code() == ErrorCode::DeviceLost) lost(rank, error);
    throw;
  }
  // Nothing of the group holds the caller's stream: a stream let go of while a gate of ours
  // runs on it must not end on its own thread.
  entry.call.stream = Stream();
  std::lock_guard lock(mutex_);
  if (member == 0) slot->algorithm = algorithm;
  joined(slot, member, std::move(entry), level);
  return Work(work);
}

void LocalGroup::lost(int rank, const Error& error) {
  std::lock_guard lock(mutex_);
  if (!broken_) {
    const hal::detail::ErrorContext context(error.device(), error.op());
    broken_ = std::make_exception_ptr(Error(
        ErrorCode::DeviceLost, "communicator '" + name_ + "': rank " + std::to_string(rank) + " (" +
                                   device(rank).id() + ") was lost: " + error.message()));
  }
  // Every collective still waiting for members waits for this rank too: it fails now.
  std::vector<SlotPtr> waiting;
  for (const auto& [sequence, slot] : collectives_)
    if (slot->joined < static_cast<int>(slot->members.size())) waiting.push_back(slot);
  for (const auto& [key, slots] : pairs_)
    for (const SlotPtr& slot : slots) waiting.push_back(slot);
  for (const SlotPtr& slot : waiting) finish(slot, broken_);
}

void LocalGroup::joined(const SlotPtr& slot, size_t member, Member entry, DebugLevel level) {
  Slot& s = *slot;
  const int rank = s.ranks[member];
  if (!s.finished) {
    for (size_t k = 0; k < s.members.size(); ++k) {
      const Member& other = s.members[k];
      if (!other.joined) continue;
      std::optional<std::string> why;
      if (point_to_point(s.kind)) {
        const Signature& sent = member == 0 ? entry.signature : other.signature;
        const Signature& expected = member == 0 ? other.signature : entry.signature;
        if (level != DebugLevel::off &&
            (sent.dtype != expected.dtype || sent.count != expected.count))
          why = "rank " + std::to_string(s.ranks[0]) + " sent " + describe(sent) + ", rank " +
                std::to_string(s.ranks[1]) + " expected " + describe(expected) + " (tag " +
                std::to_string(entry.call.tag) + ")";
      } else {
        why = mismatch(other.signature, s.ranks[k], entry.signature, rank, level);
      }
      if (why) {
        const hal::detail::ErrorContext context(device(rank).id(), to_string(s.kind));
        finish(slot, std::make_exception_ptr(Error(ErrorCode::InvalidArgument,
                                                   where(s) + ": the ranks disagree: " + *why)));
      }
      break;  // the first member joined is the reference
    }
  }
  const bool failed = s.finished;
  const bool reached = s.members[member].reached;  // its gate may have come first
  const Clock::time_point reached_at = s.members[member].reached_at;
  s.members[member] = std::move(entry);
  Member& m = s.members[member];
  m.claimed = m.joined = true;
  m.reached = reached;
  m.reached_at = reached_at;
  m.order = ++joins_[static_cast<size_t>(rank)];
  m.holds = !point_to_point(s.kind) || member == 1;  // a recv holds, a send does not
  if (!failed && m.holds) open_holds_[static_cast<size_t>(rank)].emplace_back(m.order, &s);
  if (failed) {  // a failed slot holds no tensors
    m.call = {};
    m.ready = {};
    m.work->finish(s.failure);
    m.work.reset();  // the work holds the slot: no cycle
  }
  ++s.joined;
  const bool full = s.joined == static_cast<int>(s.members.size());
  if (full) s.filled_at = Clock::now();
  if (full && failed && !point_to_point(s.kind)) collectives_.erase(s.sequence);
  if (!full || failed) return;
  // Gates that came first wait for the slot to fill with their patience as the deadline: full,
  // they must look again (poll their device, or keep no clock behind the running collective).
  s.changed.notify_all();
  if (!point_to_point(s.kind)) collectives_.erase(s.sequence);
  queue_.push_back(slot);
  if (!executor_.joinable()) executor_ = std::thread([this] { executor_loop(); });
  work_ready_.notify_one();
}

void LocalGroup::finish(const SlotPtr& slot, std::exception_ptr failure) {
  Slot& s = *slot;
  if (s.finished) return;
  s.finished = true;
  s.failure = std::move(failure);
  for (size_t k = 0; k < s.members.size(); ++k) {
    if (!s.members[k].joined || !s.members[k].holds) continue;
    auto& holds = open_holds_[static_cast<size_t>(s.ranks[k])];
    const auto it = std::find_if(holds.begin(), holds.end(),
                                 [&](const auto& hold) { return hold.second == &s; });
    if (it != holds.end()) holds.erase(it);
  }
  work_ready_.notify_all();  // a slot that waited behind this one may run now
  for (Member& m : s.members) {
    m.call = {};
    m.ready = {};
    if (m.work) m.work->finish(s.failure);
    m.work.reset();  // the work holds the slot: no cycle
  }
  if (s.joined == static_cast<int>(s.members.size()) && !point_to_point(s.kind))
    collectives_.erase(s.sequence);
  s.changed.notify_all();
}

std::exception_ptr LocalGroup::timeout_error(const Slot& slot, size_t member,
                                             Clock::duration patience) const {
  std::vector<int> absent, present;
  for (size_t k = 0; k < slot.members.size(); ++k)
    (slot.members[k].joined ? present : absent).push_back(slot.ranks[k]);
  const std::string waited = format_seconds(std::chrono::duration<double>(patience).count());
  std::string text = where(slot) + ": ";
  if (absent.empty()) {  // every rank joined; a stream has not come to it
    std::vector<int> behind;
    for (size_t k = 0; k < slot.members.size(); ++k)
      if (!slot.members[k].reached) behind.push_back(slot.ranks[k]);
    text +=
        streams_behind(behind, waited) + "work before it there waits for another call of the group";
  } else if (point_to_point(slot.kind))
    text += "rank " + list_ranks(absent) + " did not " + (member == 0 ? "receive" : "send") +
            " within " + waited + " (HAL_DIST_TIMEOUT)";
  else
    text += std::string(absent.size() == 1 ? "rank " : "ranks ") + list_ranks(absent) +
            " did not join within " + waited + " (HAL_DIST_TIMEOUT); rank" +
            (present.size() == 1 ? " " : "s ") + list_ranks(present) + " waited";
  const hal::detail::ErrorContext context(device(slot.ranks[member]).id(), to_string(slot.kind));
  return std::make_exception_ptr(Error(ErrorCode::Timeout, text));
}

std::exception_ptr LocalGroup::stalled_error(const Slot& slot, const std::vector<size_t>& behind,
                                             Clock::duration patience) const {
  std::vector<int> ranks;
  for (size_t k : behind) ranks.push_back(slot.ranks[k]);
  const std::string waited = format_seconds(std::chrono::duration<double>(patience).count());
  const hal::detail::ErrorContext context(device(ranks.front()).id(), to_string(slot.kind));
  return std::make_exception_ptr(
      Error(ErrorCode::Timeout, where(slot) + ": " + streams_behind(ranks, waited) +
                                    "work before it there has not ended (a stalled stream, or "
                                    "one held by another collective); nothing of this one ran"));
}

Clock::time_point LocalGroup::check_patience(const SlotPtr& slot, size_t member,
                                             Clock::duration patience) {
  Slot& s = *slot;
  // Ended, or the executor has it (it ends, well or not), or full with nothing ahead of it but
  // what the executor runs now (it comes next, however long that takes): no clock. A full slot
  // behind a gate that no running collective will open may never run; its patience runs.
  if (s.finished || s.running ||
      (s.joined == static_cast<int>(s.members.size()) && only_running_ahead(s)))
    return Clock::time_point::max();
  Clock::time_point end = Clock::time_point::max();
  for (size_t k = 0; k < s.members.size(); ++k)
    if (s.members[k].reached) end = std::min(end, s.members[k].reached_at + patience);
  // Full: the streams still to come have their whole patience from when the last rank joined
  // (a rank that joined late, within its time, may have work queued before the call).
  if (end != Clock::time_point::max() && s.joined == static_cast<int>(s.members.size()))
    end = std::max(end, s.filled_at + patience);
  if (Clock::now() < end) return end;
  finish(slot, timeout_error(s, member, patience));
  return Clock::time_point::max();
}

void LocalGroup::gate(const SlotPtr& slot, size_t member, Clock::duration patience, bool hold,
                      const Device& own) {
  std::exception_ptr failure;
  {
    std::unique_lock lock(mutex_);
    Member& m = slot->members[member];
    if (!m.reached) {
      m.reached = true;
      m.reached_at = Clock::now();
      slot->changed.notify_all();  // a waiting Work now has a deadline
      work_ready_.notify_all();    // and the slot may be runnable now
    }
    if (!hold) return;
    while (!slot->finished) {
      const Clock::time_point end = check_patience(slot, member, patience);
      if (slot->finished) break;
      const bool full = slot->joined == static_cast<int>(slot->members.size());
      if (!full) {
        slot->changed.wait_until(lock, end);
        continue;
      }
      // Full: running, next, or behind a gate (with its patience's end). A plugin before ABI 1.3
      // answers for a lost device only once its streams run nothing (this gate included), so a
      // gate that waited long looks at its own device, and leaves if it is lost: the executor's
      // call then returns, and the collective fails with the loss.
      const Clock::time_point poll = Clock::now() + std::chrono::milliseconds(50);
      if (slot->changed.wait_until(lock, std::min(end, poll)) == std::cv_status::no_timeout ||
          Clock::now() < poll)
        continue;
      lock.unlock();
      try {
        // A call on the device, not the stream (whose lock a synchronize may hold), that
        // reaches the backend whether or not hal has seen the loss yet.
        (void)own.allocate(1, MemoryKind::device, AllocationMode::direct);
      } catch (const Error& error) {
        if (error.code() == ErrorCode::DeviceLost) throw;
      }
      lock.lock();
    }
    failure = slot->failure;
  }
  if (failure) std::rethrow_exception(failure);
}

void LocalGroup::drive(const SlotPtr& slot, Clock::duration patience) {
  std::unique_lock lock(mutex_);
  if (slot->finished) return;
  size_t member = 0;  // the first member that reached it names the timeout
  for (size_t k = 0; k < slot->members.size(); ++k)
    if (slot->members[k].reached) {
      member = k;
      break;
    }
  const Clock::time_point end = check_patience(slot, member, patience);
  if (slot->finished) return;
  if (end == Clock::time_point::max())
    slot->changed.wait(lock);
  else
    slot->changed.wait_until(lock, end);
}

void LocalWork::drive() {
  group_->drive(std::static_pointer_cast<LocalGroup::Slot>(slot_), patience_);
}

Stream& LocalGroup::lane_stream(int rank, bool side) {
  std::vector<Stream>& streams = side ? side_streams_ : lane_streams_;
  if (streams.empty()) streams.resize(devices_.size());
  Stream& stream = streams[static_cast<size_t>(rank)];
  if (!stream) stream = device(rank).create_stream();
  return stream;
}

std::exception_ptr LocalGroup::run(const SlotPtr& slot) {
  const Slot& s = *slot;
  std::vector<Lane> lanes(s.members.size());
  std::exception_ptr failure;
  try {
    const CollectiveCall& first = s.members[0].call;
    const Tensor& sized = first.input.defined() ? first.input : first.output;
    const double bytes = sized.defined() ? static_cast<double>(sized.nbytes()) : 0.0;
    const AllReduceAlgorithm algorithm =
        s.algorithm.value_or(choose_all_reduce(static_cast<int64_t>(lanes.size()), bytes, link_));
    // The ring all-reduce writes each lane's own chunk beside its all-gather.
    const bool side = s.kind == Collective::all_reduce && algorithm == AllReduceAlgorithm::ring;
    for (size_t k = 0; k < lanes.size(); ++k) {
      const Member& m = s.members[k];
      Lane& lane = lanes[k];
      lane.device = device(s.ranks[k]);
      lane.stream = lane_stream(s.ranks[k], false);
      if (side) lane.side = lane_stream(s.ranks[k], true);
      lane.input = flat(m.call.input);
      lane.output = flat(m.call.output);
      lane.ready = m.ready;
    }
    run_local(s.kind, first.op, first.root, lanes, algorithm);
  } catch (...) {
    failure = std::current_exception();
  }
  // Every lane's streams drain, so that nothing of the collective runs after it has ended.
  for (Lane& lane : lanes)
    for (Stream* stream : {&lane.stream, &lane.side}) {
      if (!*stream) continue;
      try {
        stream->synchronize();
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
  return failure ? with_where(s, failure) : nullptr;
}

std::exception_ptr LocalGroup::with_where(const Slot& s, std::exception_ptr failure) const {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& error) {
    const hal::detail::ErrorContext context(error.device(), to_string(s.kind));
    return std::make_exception_ptr(
        Error(error.code(), where(s) + " failed: " + error.message(), error.native_code()));
  } catch (const std::exception& error) {
    const hal::detail::ErrorContext context("", to_string(s.kind));
    return std::make_exception_ptr(
        Error(ErrorCode::Internal, where(s) + " failed: " + error.what()));
  } catch (...) {  // thrown on from the executor's thread it would end the process
    const hal::detail::ErrorContext context("", to_string(s.kind));
    return std::make_exception_ptr(
        Error(ErrorCode::Internal, where(s) + " failed: an exception that is no std::exception"));
  }
}

bool LocalGroup::only_running_ahead(const Slot& slot) const {
  for (size_t k = 0; k < slot.members.size(); ++k) {
    const Member& m = slot.members[k];
    if (m.reached) continue;
    for (const auto& [order, ahead] : open_holds_[static_cast<size_t>(slot.ranks[k])])
      if (order < m.order && !ahead->running) return false;
  }
  return true;
}

bool LocalGroup::runnable(const Slot& slot) const {
  for (size_t k = 0; k < slot.members.size(); ++k) {
    const Member& m = slot.members[k];
    if (m.reached) continue;
    const auto& holds = open_holds_[static_cast<size_t>(slot.ranks[k])];
    if (!holds.empty() && holds.front().first < m.order) return false;
  }
  return true;
}

void LocalGroup::executor_loop() {
  std::unique_lock lock(mutex_);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    // The runnable full slots, in order, with their members' events (copied: a gate or a Work
    // may finish a slot, which drops them, while they are queried without the lock).
    std::vector<std::pair<SlotPtr, std::vector<Event>>> candidates;
    for (auto it = queue_.begin(); it != queue_.end();) {
      Slot& s = **it;
      if (s.finished) {  // timed out while it waited
        it = queue_.erase(it);
        continue;
      }
      if (runnable(s)) {
        if (!s.candidate) {
          s.candidate = true;
          s.candidate_since = Clock::now();
        }
        std::vector<Event> readies;
        for (const Member& m : s.members) readies.push_back(m.ready);
        candidates.emplace_back(*it, std::move(readies));
      }
      ++it;
    }
    if (candidates.empty()) {
      // Stopping waits for the queue to empty: its slots run, or time out where they cannot.
      if (stopping_ && queue_.empty()) return;
      work_ready_.wait(lock);
      continue;
    }
    // The first whose streams have all reached it runs. Its events are polled rather than
    // waited for: a stream may be stalled, or held by a later collective of this group (through
    // another group, or an event of another stream), and waiting would hold every other one.
    lock.unlock();
    SlotPtr chosen;
    std::exception_ptr failure;  // an event's query failed (a lost device)
    std::vector<std::vector<size_t>> behind(candidates.size());
    for (size_t c = 0; c < candidates.size() && !chosen; ++c) {
      try {
        const std::vector<Event>& readies = candidates[c].second;
        for (size_t k = 0; k < readies.size(); ++k)
          if (!readies[k].query()) behind[c].push_back(k);
      } catch (...) {
        failure = std::current_exception();
      }
      if (failure || behind[c].empty()) chosen = candidates[c].first;
    }
    lock.lock();
    if (chosen && !chosen->finished) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), chosen));
      chosen->running = true;
      lock.unlock();
      failure = failure ? with_where(*chosen, failure) : run(chosen);
      lock.lock();
      if (failure) {
        try {
          std::rethrow_exception(failure);
        } catch (const Error& error) {
          if (error.code() == ErrorCode::DeviceLost && !broken_) broken_ = failure;
        } catch (...) {
        }
      }
      finish(chosen, failure);
      pause = std::chrono::microseconds(20);
      continue;
    }
    // None can run yet: those whose streams did not all come within the members' patience of
    // the executor's first look fail (nothing of them enqueued, so nothing runs later), and the
    // rest are looked at again after a gate is reached (which wakes this), or a pause (an event
    // may complete with no gate run: a lost device's, or one whose host calls wait in line).
    const Clock::time_point now = Clock::now();
    for (size_t c = 0; c < candidates.size(); ++c) {
      const SlotPtr& slot = candidates[c].first;
      Clock::duration patience{};
      for (const Member& m : slot->members) patience = std::max(patience, m.patience);
      if (!slot->finished && !behind[c].empty() && now >= slot->candidate_since + patience)
        finish(slot, stalled_error(*slot, behind[c], patience));
    }
    candidates.clear();
    work_ready_.wait_for(lock, pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
  }
}

std::vector<Communicator> make_local(const std::vector<Device>& devices, std::string name) {
  if (devices.empty())
    throw Error(ErrorCode::InvalidArgument, "Communicator::local: no devices given");
  for (size_t i = 0; i < devices.size(); ++i)
    if (!devices[i])
      throw Error(ErrorCode::InvalidArgument,
                  "Communicator::local: device " + std::to_string(i) + " is empty");
  auto group = std::make_shared<LocalGroup>(devices, std::move(name));
  std::vector<Communicator> ranks;
  ranks.reserve(devices.size());
  for (int r = 0; r < group->size(); ++r) ranks.emplace_back(std::make_shared<LocalRank>(group, r));
  return ranks;
}

}  // namespace hal::dist::detail

namespace hal::dist {

std::vector<Communicator> Communicator::local(const std::vector<Device>& devices) {
  return detail::make_local(devices, "local(" + std::to_string(devices.size()) + ")");
}

}  // namespace hal::dist
