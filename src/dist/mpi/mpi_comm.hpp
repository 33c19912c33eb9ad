// The MPI engine: one process's rank of an MPI communicator.
//
// Each call becomes an MpiOp, queued in call order. It is ready once its stream has reached it
// (its gate, a host callback, stages device memory into host memory first) or at once for host
// memory on an idle stream. Every collective then exchanges a fixed-size record with all ranks
// (Bruck's allgather over MPI_Isend/MPI_Irecv on a communicator of its own): the signature
// (compared across ranks), a rank's own failure, and up to 64 bytes of data, so that a small
// collective is that exchange alone, reduced here in rank order. Larger ones then post the MPI
// collective itself on the data communicator, in call order. A send and a recv have no exchange:
// the send's MPI tag carries its dtype and number, so that the recv probes for the message of
// its number and refuses one of another dtype or size before taking its data. Requests advance
// while some thread tests them: the gate, and Work::wait. A request that has not completed
// within HAL_DIST_TIMEOUT of its op becoming ready starts a roll call on a third communicator:
// every rank still waiting answers, and the error names those that did not (stalled, dead, or
// elsewhere); the communicator is unusable after (its requests cannot be cancelled, and the
// memory they may still write is kept). Creation is bounded too: the duplicates by
// MPI_Comm_idup tested against the same timeout, a split after a barrier's exchange.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "dist/communicator_impl.hpp"
#include "dist/mpi/mpi_runtime.hpp"
#include "dist/signature.hpp"
#include "dist/work_state.hpp"
#include "hal/error.hpp"

namespace hal::dist::detail {

class MpiComm;

// What every rank sends in the exchange before a collective. A rank that cannot take part sends
// no payload: its reason takes the payload's bytes too (a load error of NCCL's is about 100).
struct Wire {
  static constexpr size_t kPayload = 64;
  static constexpr size_t kNote = 120;
  Signature signature;
  uint32_t payload_bytes = 0;
  uint32_t failed = 0;  // this rank cannot take part: `note` says why
  // This rank's HAL_DIST_DEBUG: the strictest of all ranks' judges the records, so that ranks
  // set differently still decide alike (one accepting a mismatch the others refused ran on
  // alone into MPI's collective).
  uint32_t level = 0;
  union {
    char note[kNote] = {};
    unsigned char payload[kPayload];
  };
};

class MpiOp final : public WorkState {
 public:
  // data_claimed: a large collective whose exchange agreed, for the next driving thread to run
  // as MPI's blocking collective (data_running meanwhile).
  enum class Stage {
    staging,
    ready,
    matching,  // a recv probing for its message (match_recv)
    sig_posted,
    sig_done,
    data_claimed,
    data_running,
    data_posted,
    data_done,
    failed
  };

  MpiOp(std::shared_ptr<MpiComm> owner, const CollectiveCall& made, uint64_t sequence)
      : WorkState(made.kind, sequence), comm(std::move(owner)), call(made) {}

  std::shared_ptr<MpiComm> comm;
  CollectiveCall call;
  Wire mine;
  std::vector<Wire> gathered;  // by rank, once exchanged
  // The exchange in flight (Bruck's rounds): records held so far, from this rank on.
  std::vector<Wire> blocks;
  int have = 0, distance = 1;
  MPI_Request exchange[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  std::atomic<Stage> stage{Stage::staging};  // changed under the communicator's mutex
  bool small = false;                        // the exchange carries the data
  bool signature_only = false;               // NCCL's check: no data here
  // Where MPI reads and writes: the tensors' memory (host-addressable, or CUDA memory for a
  // CUDA-aware MPI), or `staging` (input first, then the output unless in place).
  void* send = nullptr;
  void* recv = nullptr;
  size_t send_bytes = 0, recv_bytes = 0;
  bool stage_in = false, stage_out = false;
  Buffer staging_buffer;                    // pinned host memory of the tensor's device, or
  std::vector<unsigned char> staging_host;  // plain host memory where it has none
  MPI_Request request = MPI_REQUEST_NULL;
  Clock::time_point ready_at;
  Clock::duration patience{};
  std::exception_ptr failure;        // set with Stage::failed
  std::exception_ptr local_failure;  // this rank's own (staging, enqueue), told to the others
  // A recv whose message is not what it expects: received here, then the op fails with refusal.
  std::vector<unsigned char> refused_data;
  std::exception_ptr refusal;
  DebugLevel level = DebugLevel::check;

 protected:
  void drive() override;
  void poll() override;
};

class MpiComm final : public CommunicatorImpl, public std::enable_shared_from_this<MpiComm> {
 public:
  // Duplicates `parent` (collective over its ranks): data, exchange and control communicators.
  // Timeout when not every rank of `parent` takes part within HAL_DIST_TIMEOUT (duplicate).
  MpiComm(std::shared_ptr<MpiRuntime> runtime, MPI_Comm parent, std::string name);
  ~MpiComm() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Engine engine() const override { return Engine::mpi; }
  const std::string& name() const override { return name_; }
  Work submit(const CollectiveCall& call) override { return submit(call, nullptr); }

  // MPI_Comm_split of this communicator (collective over its ranks), after a bounded barrier:
  // Timeout naming a rank that does not come; past that, the watchdog bounds the split itself.
  std::shared_ptr<MpiComm> split(int color, int key, std::string name);
  // Rank 0's `bytes` to every rank, waiting for them (set-up only: NCCL's unique id); a
  // broadcast of this communicator, so Timeout naming a rank that does not come. A rank that
  // cannot take part gives `unready` (why): the others fail at once naming it and its reason,
  // and it throws `unready`.
  void broadcast_setup(void* data, int bytes, std::exception_ptr unready = nullptr);
  // The exchange alone, on the calling thread, with the timeout: NCCL's check of `call`.
  void check_blocking(const CollectiveCall& call);
  const std::shared_ptr<MpiRuntime>& runtime() const { return runtime_; }

  // One slice of waiting for `op`: advances the requests if no other thread is, then yields.
  void drive(MpiOp& op);
  // Advances the requests if no other thread is.
  void try_pump();
  // Called by the runtime's watchdog when a blocking collective of this communicator overran
  // HAL_DIST_TIMEOUT: names the absent ranks and ends the job (MPI_Abort), since MPI cannot
  // cancel a blocking collective.
  [[noreturn]] void abort_blocked(const MpiOp& op);
  // The gate on the caller's stream.
  void gate(const std::shared_ptr<MpiOp>& op);

 private:
  // submit, the op failed on this rank from the start where `unready` is set: it still goes to
  // the others (as failed), who then fail it too, naming this rank and its reason; the Work
  // returned throws `unready` once they have it.
  Work submit(const CollectiveCall& call, std::exception_ptr unready);
  // The three duplicates, by MPI_Comm_idup tested on this thread until HAL_DIST_TIMEOUT:
  // MPI_Comm_dup would wait for ever for a rank that never takes part. The runtime's thread
  // level (MPI_THREAD_MULTIPLE, or SERIALIZED under serialize()) lets any thread test.
  void duplicate(MPI_Comm parent);
  // InvalidArgument where `op` has a tensor of more than `max_elements` (mpi_max_elements():
  // MPI's int counts), naming it; null where it fits. Submitted as failed, so that every rank
  // refuses it together before anything is posted.
  std::exception_ptr count_refusal(const MpiOp& op, int64_t max_elements) const;
  void prepare_memory(MpiOp& op);
  void mark_ready(MpiOp& op, std::exception_ptr local_failure);
  // Under mutex_: posts what may be posted, in order, and tests what is posted.
  void pump();
  void post_exchange(MpiOp& op);
  void post_round(MpiOp& op);
  bool exchange_progress(MpiOp& op);
  void exchanged(MpiOp& op);
  void post_data(MpiOp& op);
  // Point to point: the MPI tag of `op`'s message sent in `dtype` (see mpi_comm.cpp).
  int wire_tag(const MpiOp& op, DType dtype) const;
  // A recv's look for its message, in its own dtype first, then in the others.
  void match_recv(MpiOp& op);
  bool probe_as(MpiOp& op, DType sent);
  void take_message(MpiOp& op, DType sent, MPI_Message& message, const MPI_Status& status);
  // Runs the claimed collective, if any, as MPI's blocking call on this thread (drive).
  void run_claimed();
  int call_blocking(MpiOp& op, MPI_Status& status);
  void data_done(MpiOp& op, const MPI_Status& status);
  void finish_small(MpiOp& op);
  void completed(MpiOp& op);
  void fail_op(MpiOp& op, std::exception_ptr failure);
  // Under mutex_: the communicator is unusable; every pending op fails with `failure`.
  void break_down(std::exception_ptr failure);
  void check_deadlines(Clock::time_point now);
  // Reads the other ranks' control messages, at most every millisecond unless `now_anyway`.
  void check_control(Clock::time_point now, bool now_anyway);
  // Control messages by sender: {type, sequence, kind}.
  using Answers = std::map<int, std::array<uint64_t, 3>>;
  // Tells every rank this one gives `late` up, and names those that do not answer within the
  // grace period (those in `gave_up` already did).
  std::exception_ptr roll_call(const MpiOp& late, const Answers& gave_up);
  void send_control(int to, int type, const MpiOp* op);
  std::string where(const MpiOp& op) const;
  std::exception_ptr error(const MpiOp& op, ErrorCode code, const std::string& text) const;

  std::shared_ptr<MpiRuntime> runtime_;
  std::string name_;
  MPI_Comm data_ = MPI_COMM_NULL, exchange_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool oversubscribed_ = false;  // more ranks on this node than cores
  // The bits of the pair's message number in a point-to-point tag; -1 where MPI's tags are
  // too short to carry it and the dtype (the recv is then unchecked but for its size).
  int sequence_bits_ = -1;

  std::mutex mutex_;
  std::deque<std::shared_ptr<MpiOp>> ops_;  // in call order, until done
  uint64_t collectives_ = 0;
  std::map<std::tuple<int, int, int>, uint64_t> pairs_;  // send/recv numbers per peer and tag
  std::exception_ptr broken_;
  std::vector<std::shared_ptr<MpiOp>> abandoned_;  // posted when the communicator broke
  Clock::time_point last_control_check_{};
  // Who advances MPI for this communicator's waiters (drive): one thread, the others asleep.
  std::mutex wait_mutex_;
  std::condition_variable progress_;
  bool driving_ = false;
  std::atomic<uint64_t> endings_{0};  // ops that ended, for the driver to hand over
  std::deque<std::array<uint64_t, 3>> control_messages_;  // sent; MPI reads them until done
};

// The communicator of the job's processes, made once.
std::shared_ptr<MpiComm> world_comm();

}  // namespace hal::dist::detail
