// A group of ranks in one process, each driving one device: the local engine.
//
// A rank's call joins the collective of its number (its k-th call joins the k-th collective;
// a send joins the first unmatched recv of the same pair and tag). The call records an event
// on the caller's stream (Lane::ready) and enqueues there a gate, a host callback that keeps
// the stream's later work waiting until the collective is done. The group's executor thread
// runs the full collectives one at a time: the first, in order, whose members' events have all
// completed (polled, never waited for: a stream may be stalled, or held by a later collective of
// the group through another group or another stream's event) and none of whose members' events
// waits behind the gate of another that has not run (a rank's earlier call, or one its stream
// has not reached): it enqueues the algorithm on the group's own stream per rank, waits for
// those streams, and opens the gates (the second rule: receives posted in one order and sent in
// another would otherwise wait for each other). A send copies its tensor at its place in the stream
// and does not hold the stream (so that a ring of sends, then receives, cannot deadlock); a recv
// does. A collective that does not fill within HAL_DIST_TIMEOUT of a member's stream reaching
// it fails with Timeout naming the ranks that did not join (seen by the gate or by
// Work::wait), and so does a full one that waits that long behind a gate no collective will
// open, or whose streams do not all reach it within that time of the executor's first look
// (naming them; nothing of it enqueued, so nothing runs later); signatures that disagree fail it at
// once; a device lost during it fails it, and every later call of the group, with DeviceLost.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "dist/communicator_impl.hpp"
#include "dist/signature.hpp"
#include "dist/work_state.hpp"
#include "hal/error.hpp"

namespace hal::dist::detail {

class LocalWork;

class LocalGroup : public std::enable_shared_from_this<LocalGroup> {
 public:
  LocalGroup(std::vector<Device> devices, std::string name);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  const Device& device(int rank) const { return devices_[static_cast<size_t>(rank)]; }
  const std::string& name() const { return name_; }

  Work join(int rank, const CollectiveCall& call);

 private:
  struct Member {
    bool claimed = false;  // a call has taken this place (and may still fail to enqueue)
    bool joined = false;   // its event and gate are enqueued
    bool reached = false;  // its stream has come to it
    Clock::time_point reached_at;
    uint64_t order = 0;          // the rank's how-manieth call this is (its stream's order)
    Clock::duration patience{};  // HAL_DIST_TIMEOUT at its call
    bool holds = false;          // its gate holds the stream until the end (all but a send)
    std::shared_ptr<WorkState> work;
    CollectiveCall call;
    Event ready;
    Signature signature;
  };
  // One collective, or one send with its recv (members: sender, receiver).
  struct Slot {
    Collective kind = Collective::barrier;
    uint64_t sequence = 0;
    std::vector<int> ranks;  // the group ranks of the members, in member order
    std::vector<Member> members;
    int joined = 0;
    Clock::time_point filled_at;                  // when the last member joined
    std::optional<AllReduceAlgorithm> algorithm;  // HAL_DIST_LOCAL_ALGORITHM at rank 0's call
    bool candidate = false;  // the executor has looked at it, full and runnable, since
    Clock::time_point candidate_since;
    bool running = false;  // the executor has it: it ends, well or not
    bool finished = false;
    std::exception_ptr failure;
    std::condition_variable changed;  // under the group's mutex
  };
  using SlotPtr = std::shared_ptr<Slot>;
  using PairKey = std::tuple<int, int, int>;  // sender, receiver, tag

  // Under mutex_: the slot `rank`'s call joins, made if it is the first of its members.
  SlotPtr slot_for(int rank, const CollectiveCall& call, size_t& member);
  // Under mutex_: marks the member joined, checks its signature, queues a full slot.
  void joined(const SlotPtr& slot, size_t member, Member entry, DebugLevel level);
  // A rank's device was lost before it could join: the group is broken, the collectives that
  // wait for members fail now.
  void lost(int rank, const Error& error);
  // Under mutex_: ends a slot with `failure` (or success) and lets go of its tensors.
  void finish(const SlotPtr& slot, std::exception_ptr failure);
  // The gate, on the caller's stream once it reaches the collective: marks the member there,
  // and (but for a send) waits for the end.
  void gate(const SlotPtr& slot, size_t member, Clock::duration patience, bool hold,
            const Device& own);
  // Work::wait's slice: waits for the end, failing the slot once a member's patience is over.
  friend class LocalWork;
  void drive(const SlotPtr& slot, Clock::duration patience);
  // Under mutex_: fails the slot with Timeout when it is not full and a member reached it more
  // than `patience` ago; returns when the next member's patience ends (or max()).
  Clock::time_point check_patience(const SlotPtr& slot, size_t member, Clock::duration patience);
  std::exception_ptr timeout_error(const Slot& slot, size_t member, Clock::duration patience) const;
  // The executor's part, once every member's stream has reached the collective: runs it on the
  // lanes and waits for them; its failure (with_where), or null.
  std::exception_ptr run(const SlotPtr& slot);
  // `failure` as the collective's: "all_reduce #3 on communicator 'x' failed: ...".
  std::exception_ptr with_where(const Slot& slot, std::exception_ptr failure) const;
  // Timeout of a collective the streams of members `behind` did not reach in time.
  std::exception_ptr stalled_error(const Slot& slot, const std::vector<size_t>& behind,
                                   Clock::duration patience) const;
  // Under mutex_: whether every member's event can complete without another slot running
  // first: its stream has reached the gate, or no earlier call of its rank holds a stream.
  bool runnable(const Slot& slot) const;
  // Under mutex_: whether every gate ahead of the slot's members belongs to the collective the
  // executor runs now (none at all: runnable).
  bool only_running_ahead(const Slot& slot) const;
  void executor_loop();
  Stream& lane_stream(int rank, bool side);  // executor thread only
  std::string where(const Slot& slot) const;

  const std::vector<Device> devices_;
  const std::string name_;
  const LinkModel link_;

  std::mutex mutex_;
  std::vector<uint64_t> calls_;  // collectives each rank has joined
  std::vector<uint64_t> joins_;  // calls each rank has joined, of any kind
  // Per rank, the slots whose gates hold one of its streams and that have not finished, by
  // the member's order: the front is the earliest.
  std::vector<std::deque<std::pair<uint64_t, const Slot*>>> open_holds_;
  std::map<uint64_t, SlotPtr> collectives_;       // by number, until every member has joined
  std::map<PairKey, std::deque<SlotPtr>> pairs_;  // unmatched sends and recvs
  std::map<PairKey, uint64_t> pair_counts_;
  std::exception_ptr broken_;  // a lost device: every later call fails with it
  std::deque<SlotPtr> queue_;  // full slots for the executor, in order
  std::condition_variable work_ready_;
  bool stopping_ = false;
  std::thread executor_;  // started with the first full slot

  std::vector<Stream> lane_streams_;  // the executor's, made on first use
  std::vector<Stream> side_streams_;  // a second per rank, for work beside the lane's
};

// One rank's handle on a LocalGroup.
class LocalRank final : public CommunicatorImpl {
 public:
  LocalRank(std::shared_ptr<LocalGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Engine engine() const override { return Engine::local; }
  const std::string& name() const override { return group_->name(); }
  Device device() const override { return group_->device(rank_); }
  Work submit(const CollectiveCall& call) override { return group_->join(rank_, call); }

 private:
  std::shared_ptr<LocalGroup> group_;
  int rank_;
};

// Communicators for `devices` named `name` (meshes name their groups).
std::vector<Communicator> make_local(const std::vector<Device>& devices, std::string name);

}  // namespace hal::dist::detail
