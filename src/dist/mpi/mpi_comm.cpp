#include "dist/mpi/mpi_comm.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <utility>

#include "core/callback_thread.hpp"
#include "core/error_context.hpp"
#include "core/host_cpu.hpp"
#include "core/staged_copy.hpp"
#include "dist/host_reduce.hpp"
#include "dist/mpi/device_pointer.hpp"
#include "hal/backend.hpp"
#include "hal/log.hpp"
#include "hal/units.hpp"

namespace hal::dist::detail {
namespace {

constexpr int kControlTag = 7;
enum ControlType : uint64_t { kAbandon = 1, kPresent = 2 };

// A point-to-point message's MPI tag, from the low bits: the caller's tag (15 bits, up to
// communicator.cpp's 32767), the sender's dtype (4 bits) and the pair's message number modulo
// 2^sequence_bits_ (12 bits where MPI_TAG_UB is 2^31 - 1, as in Open MPI). The k-th recv probes
// for number k in every dtype: it meets the k-th send whatever that sent, unless the sender runs
// 4096 messages of that pair and tag ahead. Fewer than 8 bits for the number: tags as given.
constexpr int kUserTagBits = 15, kDTypeBits = 4, kMinSequenceBits = 8, kMaxSequenceBits = 12;

int sequence_bits(int tag_ub) {
  const int64_t tags = static_cast<int64_t>(tag_ub) + 1;
  int bits = 0;
  while (bits < kMaxSequenceBits && (int64_t{1} << (kUserTagBits + kDTypeBits + bits + 1)) <= tags)
    ++bits;
  return bits >= kMinSequenceBits ? bits : -1;
}

// "3 elements of f32 (12 bytes)".
std::string elements_text(int64_t count, DType dtype) {
  return std::to_string(count) + " elements of " + std::string(to_string(dtype)) + " (" +
         std::to_string(count * static_cast<int64_t>(size_of(dtype))) + " bytes)";
}

using Stage = MpiOp::Stage;

bool point_to_point(Collective kind) {
  return kind == Collective::send || kind == Collective::recv;
}

size_t byte_offset(const Tensor& t) { return static_cast<size_t>(t.offset()) * t.element_size(); }

void* host_pointer(const Tensor& t) {
  if (!t.storage().host_accessible()) return nullptr;
  return static_cast<char*>(t.storage().host_data()) + byte_offset(t);
}

bool same_memory(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.storage().impl() == b.storage().impl() &&
         a.offset() == b.offset();
}

std::string list(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::string ranks_word(size_t count) { return count == 1 ? "rank " : "ranks "; }

std::string message_of(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    return std::string(to_string(e.code())) + ": " + e.message();
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Where a request that will not complete in time is given up: before the deadline by the time
// a roll call takes, so that the error comes within HAL_DIST_TIMEOUT.
Clock::duration grace_of(Clock::duration patience) {
  using namespace std::chrono;
  return std::clamp<Clock::duration>(patience / 10, milliseconds(20), seconds(2));
}

// Fault injection, RANK:SECONDS: that rank sleeps, as a stalled process would.
// HAL_DIST_INJECT_STALL: before each blocking collective (the tests of the watchdog);
// HAL_DIST_INJECT_CREATE_STALL: before duplicating the communicator it creates (after MPI_Init,
// which the ranks pass together), the tests of creation's timeout.
void injected_stall(const char* variable, int rank) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return;
  const std::string value(text);
  const size_t colon = value.find(':');
  const Parsed<uint64_t> who = parse_count(variable, value.substr(0, colon), 0, 1u << 24);
  const Parsed<double> seconds =
      parse_real(variable, colon == std::string::npos ? "" : value.substr(colon + 1), 0, 3600);
  if (!who.value || !seconds.value) {
    log(LogLevel::warn, "hal dist: " + std::string(variable) + "='" + value +
                            "' is not RANK:SECONDS; no stall injected");
    return;
  }
  if (static_cast<int>(*who.value) == rank)
    std::this_thread::sleep_for(std::chrono::duration<double>(*seconds.value));
}

// Says `message` as a Timeout (in the log and on stderr, where the log may go nowhere) and ends
// the job: a blocking MPI call that overran cannot be cancelled, and nothing returns from it.
[[noreturn]] void end_job(const std::string& message) {
  log(LogLevel::error, "hal dist: " + message);
  std::fprintf(stderr, "hal: Timeout: %s\n", message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 14);
  std::abort();
}

}  // namespace

// ---- construction ----

MpiComm::MpiComm(std::shared_ptr<MpiRuntime> runtime, MPI_Comm parent, std::string name)
    : runtime_(std::move(runtime)), name_(std::move(name)) {
  {
    auto serial = runtime_->serialize();
    MPI_Comm_rank(parent, &rank_);  // the duplicates' too
    MPI_Comm_size(parent, &size_);
  }
  injected_stall("HAL_DIST_INJECT_CREATE_STALL", rank_);
  duplicate(parent);
  sequence_bits_ = sequence_bits(runtime_->tag_ub());
  const LaunchInfo launch = launch_info();
  oversubscribed_ = launch.local_size > static_cast<int>(std::thread::hardware_concurrency());
}

void MpiComm::duplicate(MPI_Comm parent) {
  const Clock::duration patience = timeout();
  const Clock::time_point deadline = Clock::now() + patience;
  const std::string what = "creating communicator '" + name_ + "' (rank " + std::to_string(rank_) +
                           " of " + std::to_string(size_) + ")";
  // Where MPI writes a duplicate's handle, which it may do until its request completes.
  struct Pending {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  // One at a time: the deadline covers all three, and at most one request is left pending.
  for (MPI_Comm* comm : {&data_, &exchange_, &control_}) {
    auto pending = std::make_unique<Pending>();
    {
      auto serial = runtime_->serialize();
      check_mpi(MPI_Comm_idup(parent, &pending->comm, &pending->request), what, "MPI_Comm_idup");
    }
    int done = 0, code = MPI_SUCCESS;
    for (;;) {
      {
        auto serial = runtime_->serialize();
        code = MPI_Test(&pending->request, &done, MPI_STATUS_IGNORE);
      }
      if (done || code != MPI_SUCCESS || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // the cores of the others
    }
    if (!done || code != MPI_SUCCESS) {
      // MPI can neither cancel nor free a nonblocking collective's request, and completes it
      // should the missing rank come after all, writing the handle: the request and its handle
      // are left to MPI until the process ends, and so are the duplicates made before it. The
      // constructor throws: no MpiComm holds any of them. With the request pending, MPI must
      // not be finalised at exit (communicator_broken).
      static_cast<void>(pending.release());
      const std::string text =
          what + (code != MPI_SUCCESS
                      ? ": MPI_Test failed: " + MpiRuntime::describe(code)
                      : ": MPI_Comm_idup did not complete within " +
                            format_seconds(std::chrono::duration<double>(patience).count()) +
                            " (HAL_DIST_TIMEOUT): a rank did not take part (stalled, dead, or not "
                            "creating it), or this rank came late; the communicator is not made");
      const Error failure(code != MPI_SUCCESS ? ErrorCode::Internal : ErrorCode::Timeout, text,
                          code);
      runtime_->communicator_broken(std::string(to_string(failure.code())) + ": " + text);
      throw failure;
    }
    *comm = pending->comm;
    auto serial = runtime_->serialize();
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
  }
}

MpiComm::~MpiComm() {
  // A broken communicator has requests that never complete: MPI keeps it until finalisation.
  if (broken_ || runtime_->finalized()) return;
  auto serial = runtime_->serialize();
  for (MPI_Comm* comm : {&data_, &exchange_, &control_})
    if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
}

std::shared_ptr<MpiComm> MpiComm::split(int color, int key, std::string name) {
  // MPI_Comm_split has no nonblocking form (MPI-3 or 4). The ranks first meet in a barrier's
  // exchange, bounded as any collective's: one that never comes is named there with Timeout
  // (and this communicator is unusable after, as for any timeout). One that stalls or dies
  // between that and the split leaves the others in MPI_Comm_split: the watchdog ends the job at
  // HAL_DIST_TIMEOUT, as for a blocking collective, where MPI lets it call MPI_Abort from its own
  // thread meanwhile (MPI_THREAD_MULTIPLE); below that the split's wait has no bound.
  check_blocking(CollectiveCall{});
  const Clock::duration patience = timeout();
  uint64_t ticket = 0;
  if (runtime_->thread_multiple()) {
    const std::string overrun =
        "splitting communicator '" + name_ + "' (rank " + std::to_string(rank_) + " of " +
        std::to_string(size_) + "): MPI_Comm_split did not complete within " +
        format_seconds(std::chrono::duration<double>(patience).count()) +
        " (HAL_DIST_TIMEOUT), though every rank had met before it (one stalled or died since); "
        "MPI cannot cancel it, so the job ends (MPI_Abort)";
    ticket = runtime_->watch(Clock::now() + patience, [overrun] { end_job(overrun); });
  }
  MPI_Comm sub = MPI_COMM_NULL;
  int code = MPI_SUCCESS;
  {
    auto serial = runtime_->serialize();
    // Split from exchange_, which carries only point-to-point messages: data_ may still have
    // an earlier collective's data phase in flight on some ranks and not on others (the barrier
    // above completes at its exchange), and collectives on one communicator must start in the
    // same order on every rank.
    code = MPI_Comm_split(exchange_, color, key, &sub);
  }
  if (ticket != 0) runtime_->unwatch(ticket);
  check_mpi(code, "communicator '" + name_ + "'", "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) return nullptr;
  // Should duplicating `sub` time out, `sub` stays: the pending duplicate is made from it.
  auto made = std::make_shared<MpiComm>(runtime_, sub, std::move(name));
  auto serial = runtime_->serialize();
  MPI_Comm_free(&sub);
  return made;
}

void MpiComm::broadcast_setup(void* data, int bytes, std::exception_ptr unready) {
  // This communicator's own broadcast of a host tensor, bounded as any of its collectives: a
  // rank that does not come is named (Timeout) within HAL_DIST_TIMEOUT, where a blocking
  // MPI_Bcast waited for it without end.
  Stream stream = hal::detail::host_cpu().create_stream();
  Tensor buffer = from_host(data, {bytes}, DType::u8, stream);
  submit({Collective::broadcast, buffer, buffer, ReduceOp::sum, 0, 0, stream}, std::move(unready))
      .wait();
  buffer.copy_to_host(data, stream);
  stream.synchronize();
}

std::shared_ptr<MpiComm> world_comm() {
  static std::mutex mutex;
  static std::shared_ptr<MpiComm> world;  // one for the process, kept until exit
  // Why it could not be made, thrown again by every later call: another try would post new
  // duplicates behind those left pending, to be paired with what the other ranks do next. A
  // malformed setting (HAL_DIST_TIMEOUT) left nothing pending: fixed, the next call may try.
  static std::exception_ptr failed;
  std::lock_guard lock(mutex);
  if (failed) std::rethrow_exception(failed);
  if (!world) {
    std::shared_ptr<MpiRuntime> runtime = MpiRuntime::get();  // its refusals are not kept
    try {
      world = std::make_shared<MpiComm>(std::move(runtime), MPI_COMM_WORLD, "world");
    } catch (const Error& error) {
      if (error.code() != ErrorCode::InvalidArgument) failed = std::current_exception();
      throw;
    }
  }
  return world;
}

// ---- messages ----

std::string MpiComm::where(const MpiOp& op) const {
  std::string text = std::string(to_string(op.kind())) + " #" + std::to_string(op.sequence());
  if (op.kind() == Collective::send)
    text +=
        " to rank " + std::to_string(op.call.root) + " (tag " + std::to_string(op.call.tag) + ")";
  if (op.kind() == Collective::recv)
    text +=
        " from rank " + std::to_string(op.call.root) + " (tag " + std::to_string(op.call.tag) + ")";
  return text + " on communicator '" + name_ + "' (rank " + std::to_string(rank_) + " of " +
         std::to_string(size_) + ")";
}

std::exception_ptr MpiComm::error(const MpiOp& op, ErrorCode code, const std::string& text) const {
  const Tensor& t = op.call.input.defined() ? op.call.input : op.call.output;
  const std::string device_id = t.defined() ? t.device().id() : std::string();  // outlives it
  const hal::detail::ErrorContext context(device_id, to_string(op.kind()));
  return std::make_exception_ptr(Error(code, text));
}

// ---- submission ----

Work MpiComm::submit(const CollectiveCall& call, std::exception_ptr unready) {
  const Clock::duration patience = timeout();
  const DebugLevel level = debug_level();
  const int64_t max_elements = mpi_max_elements();
  std::shared_ptr<MpiOp> op;
  const bool told_unready = unready != nullptr;
  std::exception_ptr unprepared = std::move(unready);
  bool refused = false;
  {
    std::lock_guard lock(mutex_);
    if (broken_)
      throw Error(ErrorCode::InvalidState, std::string(to_string(call.kind)) +
                                               " on communicator '" + name_ +
                                               "': the communicator is unusable after an earlier "
                                               "failure: " +
                                               message_of(broken_));
    const uint64_t sequence = point_to_point(call.kind)
                                  ? ++pairs_[{static_cast<int>(call.kind), call.root, call.tag}]
                                  : ++collectives_;
    op = std::make_shared<MpiOp>(shared_from_this(), call, sequence);
    op->patience = patience;
    op->level = level;
    op->signature_only = false;
    if (!unprepared) {
      unprepared = count_refusal(*op, max_elements);
      refused = unprepared != nullptr;
    }
    try {
      if (!unprepared) prepare_memory(*op);  // a staging buffer of a lost or full device may throw
    } catch (...) {
      unprepared = std::current_exception();
    }
    if (level == DebugLevel::detail)
      log(LogLevel::info,
          "hal dist: " + where(*op) + ": " + describe(signature_of(call, sequence)));
    // The number is taken: an op this rank cannot run still goes to the others, as failed
    // (below), or their #n would meet this rank's #n + 1.
    ops_.push_back(op);
    // Host memory on an idle stream: nothing to wait for, so the exchange is posted now.
    if (!unprepared && !op->stage_in && op->call.stream.query()) {
      op->stage = Stage::ready;
      op->ready_at = Clock::now();
      auto serial = runtime_->serialize();
      pump();
    }
  }
  // The op lets go of the caller's stream: a stream let go of while the gate runs on it must
  // not end on its own thread.
  Stream stream = std::exchange(op->call.stream, Stream());
  if (unprepared) {
    mark_ready(*op, unprepared);
    // A caller that said it cannot take part waits for the exchange, so that the others have
    // surely heard why before it goes on (or ends); Work::wait then throws its reason.
    if (told_unready) return Work(op);
    // A call refused for its size waits likewise: the others fail at once naming this rank (or
    // refuse it themselves), none waits for it until HAL_DIST_TIMEOUT. Its wait throws the
    // refusal, or what broke the communicator meanwhile.
    if (refused) Work(op).wait();
    std::rethrow_exception(unprepared);
  }
  // A small collective posted at once gets a few microseconds to end here: done, it needs no
  // gate on the stream (whose worker would have to wake for it), and the next call finds the
  // stream idle again.
  if (op->small && op->stage != Stage::staging) {
    // Where ranks outnumber cores a peer may wait for a core a while before it answers.
    const Clock::time_point until =
        Clock::now() + std::chrono::microseconds(oversubscribed_ ? 200 : 20);
    for (unsigned tests = 1; !op->completed() && Clock::now() < until; ++tests) {
      try_pump();
      if (oversubscribed_ && tests % 8 == 0) std::this_thread::yield();
    }
    if (op->completed() && op->stage != Stage::failed) return Work(op);
  }
  try {
    // Even on a device lost before it runs: the gate finds the loss staging the data and tells
    // the other ranks, who would otherwise wait for HAL_DIST_TIMEOUT (and this rank for ever).
    hal::detail::host_callback_even_if_lost(*stream.impl(), [op] { op->comm->gate(op); });
  } catch (...) {
    // The others must not wait for an op this rank cannot run: it goes to them as failed.
    mark_ready(*op, std::current_exception());
    throw;
  }
  return Work(op);
}

std::exception_ptr MpiComm::count_refusal(const MpiOp& op, int64_t max_elements) const {
  // The larger tensor: all_gather's output and reduce_scatter's input hold every rank's part,
  // which MPI addresses through the same int counts.
  const Tensor* largest = nullptr;
  for (const Tensor* t : {&op.call.input, &op.call.output})
    if (t->defined() && (!largest || t->numel() > largest->numel())) largest = t;
  if (!largest || largest->numel() <= max_elements) return nullptr;
  return error(op, ErrorCode::InvalidArgument,
               where(op) + ": " + elements_text(largest->numel(), largest->dtype()) + " in " +
                   largest->describe() + " exceed the " + std::to_string(max_elements) +
                   " elements one MPI call takes (MPI's counts are int; this MPI has no MPI-4 "
                   "big-count calls), so no rank runs it; split the tensor");
}

void MpiComm::prepare_memory(MpiOp& op) {
  const Tensor& in = op.call.input;
  const Tensor& out = op.call.output;
  op.send_bytes = in.defined() ? in.nbytes() : 0;
  op.recv_bytes = out.defined() ? out.nbytes() : 0;
  // Everything of a collective whose input fits the exchange travels in it.
  op.small = !point_to_point(op.call.kind) && op.send_bytes <= Wire::kPayload &&
             op.recv_bytes <= Wire::kPayload * static_cast<size_t>(size_);
  auto direct = [&](const Tensor& t) -> void* {
    if (void* host = host_pointer(t)) return host;
    // A CUDA-aware MPI reads device memory itself, except where hal computes on the data.
    if (!op.small && op.call.op != ReduceOp::avg && runtime_->cuda_aware())
      return mpi_device_pointer(t);
    return nullptr;
  };
  const bool in_place = same_memory(in, out);
  // A send copies its tensor at its place in the stream and lets the stream go on (a ring of
  // sends, then receives, on one stream would otherwise wait for itself).
  const bool snapshot = op.call.kind == Collective::send;
  op.send = in.defined() && !snapshot ? direct(in) : nullptr;
  op.recv = out.defined() ? (in_place ? op.send : direct(out)) : nullptr;
  op.stage_in = in.defined() && op.send == nullptr && op.send_bytes > 0;
  op.stage_out = out.defined() && op.recv == nullptr && op.recv_bytes > 0;
  const size_t bytes =
      (op.stage_in ? op.send_bytes : 0) + (op.stage_out && !in_place ? op.recv_bytes : 0);
  if (bytes == 0) return;
  const Device device = (in.defined() ? in : out).device();
  unsigned char* staging = nullptr;
  if (device.info().has_feature(feature::kPinnedHostMemory)) {
    op.staging_buffer = device.allocate(bytes, MemoryKind::pinned_host);
    staging = op.staging_buffer.data<unsigned char>();
  } else {
    op.staging_host.resize(bytes);
    staging = op.staging_host.data();
  }
  if (op.stage_in) op.send = staging;
  if (op.stage_out) op.recv = in_place ? op.send : staging + (op.stage_in ? op.send_bytes : 0);
}

void MpiComm::mark_ready(MpiOp& op, std::exception_ptr local_failure) {
  std::lock_guard lock(mutex_);
  if (op.stage != Stage::staging) return;  // ready at submission, or failed already
  op.local_failure = std::move(local_failure);
  op.ready_at = Clock::now();
  op.stage = Stage::ready;
  auto serial = runtime_->serialize();
  pump();
}

void MpiComm::gate(const std::shared_ptr<MpiOp>& op) {
  std::exception_ptr local;
  if (op->stage_in) {
    try {
      const Tensor& in = op->call.input;
      hal::detail::read_now(op->send, in.storage().impl(), byte_offset(in), op->send_bytes);
    } catch (...) {
      local = std::current_exception();
    }
  }
  mark_ready(*op, local);
  if (op->kind() == Collective::send) return;  // its copy is made: Work::wait follows it
  for (;;) {
    const Stage stage = op->stage;
    if (stage == Stage::data_done || stage == Stage::failed) break;
    drive(*op);
  }
  if (op->stage == Stage::failed) std::rethrow_exception(op->failure);
  if (op->stage_out && !op->completed()) {
    const Tensor& out = op->call.output;
    try {
      hal::detail::write_now(out.storage().impl(), byte_offset(out), op->recv, op->recv_bytes);
    } catch (...) {
      op->finish(std::current_exception());
      throw;
    }
  }
  op->finish();
}

void MpiOp::drive() {
  // Done with MPI, the gate writes the result to the device: nothing to advance meanwhile.
  if (stage == Stage::data_done) return wait_for_finish(std::chrono::milliseconds(1));
  comm->drive(*this);
}
void MpiOp::poll() { comm->try_pump(); }

void MpiComm::try_pump() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  auto serial = runtime_->serialize();
  pump();
}

void MpiComm::drive(MpiOp& op) {
  auto done = [&] {
    const Stage stage = op.stage;
    return stage == Stage::data_done || stage == Stage::failed;
  };
  {
    // One thread at a time advances MPI; the others sleep until an op ends (or a while, so
    // that one takes over from a driver that left). Spinning threads would take the cores
    // the other ranks of an oversubscribed node need.
    std::unique_lock lock(wait_mutex_);
    if (driving_) {
      progress_.wait_for(lock, std::chrono::milliseconds(1), [&] { return done() || !driving_; });
      return;
    }
    driving_ = true;
  }
  const Clock::time_point start = Clock::now();
  uint64_t seen = endings_.load(std::memory_order_acquire);
  // A slice of driving: MPI's non-blocking collectives advance only inside MPI calls, so this
  // tests again at once (yielding the core), then backs off in a long wait.
  // On a node with more ranks than cores, the core goes to the others every few tests (as
  // Open MPI's own waits do there), else rarely.
  const unsigned yield_every = oversubscribed_ ? 8 : 256;
  for (unsigned tests = 1; !done() && Clock::now() - start < std::chrono::milliseconds(10);
       ++tests) {
    try_pump();
    run_claimed();
    if (endings_.load(std::memory_order_acquire) != seen) break;  // let waiters see theirs
    const Stage stage = op.stage;
    if (stage != Stage::staging && Clock::now() - op.ready_at > std::chrono::seconds(1))
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    else if (tests % yield_every == 0)
      std::this_thread::yield();
  }
  seen = endings_.load(std::memory_order_acquire);
  {
    std::lock_guard lock(wait_mutex_);
    driving_ = false;
  }
  progress_.notify_all();
}

void MpiComm::check_blocking(const CollectiveCall& call) {
  std::shared_ptr<MpiOp> op;
  {
    std::lock_guard lock(mutex_);
    if (broken_)
      throw Error(ErrorCode::InvalidState,
                  "communicator '" + name_ +
                      "' is unusable after an earlier failure: " + message_of(broken_));
    op = std::make_shared<MpiOp>(shared_from_this(), call, ++collectives_);
    op->patience = timeout();
    op->level = debug_level();
    op->signature_only = true;
    ops_.push_back(op);
  }
  mark_ready(*op, nullptr);
  for (;;) {
    const Stage stage = op->stage;
    if (stage == Stage::data_done || stage == Stage::failed) break;
    drive(*op);
  }
  if (op->stage == Stage::failed) std::rethrow_exception(op->failure);
}

// ---- the pump ----

void MpiComm::pump() {
  if (broken_) return;
  // Before a collective starts: a rank that gave up on this communicator meanwhile means this
  // rank came late, and must not complete an exchange the others have left.
  if (std::any_of(ops_.begin(), ops_.end(), [](const std::shared_ptr<MpiOp>& op) {
        return op->stage == Stage::ready && !point_to_point(op->kind());
      })) {
    check_control(Clock::now(), /*now_anyway=*/true);
    if (broken_) return;
  }
  bool exchange_blocked = false, data_blocked = false;
  for (size_t i = 0; i < ops_.size() && !broken_; ++i) {
    MpiOp& op = *ops_[i];
    if (point_to_point(op.kind())) {  // matched by peer and tag: no order among the others
      if (op.stage == Stage::ready) {
        if (op.local_failure)
          fail_op(op, op.local_failure);
        else
          post_data(op);
      }
      if (op.stage == Stage::matching) match_recv(op);
      if (broken_) return;
      if (op.stage == Stage::data_posted) {
        int flag = 0;
        MPI_Status status{};
        const int code = MPI_Test(&op.request, &flag, &status);
        if (code != MPI_SUCCESS) {
          int error_class = 0;
          MPI_Error_class(code, &error_class);
          fail_op(op,
                  error(op,
                        error_class == MPI_ERR_TRUNCATE ? ErrorCode::InvalidArgument
                                                        : ErrorCode::Internal,
                        where(op) + ": " +
                            (error_class == MPI_ERR_TRUNCATE
                                 ? "rank " + std::to_string(op.call.root) + " sent more than the " +
                                       std::to_string(op.call.output.numel()) + " elements of " +
                                       op.call.output.describe()
                                 : MpiRuntime::describe(code))));
        } else if (flag && op.refusal) {
          fail_op(op, op.refusal);
        } else if (flag) {
          data_done(op, status);
        }
      }
      continue;
    }
    if (op.stage == Stage::staging) {
      exchange_blocked = data_blocked = true;
      continue;
    }
    if (op.stage == Stage::ready) {
      if (exchange_blocked) {
        data_blocked = true;
        continue;
      }
      post_exchange(op);
    }
    if (op.stage == Stage::sig_posted) {
      const bool complete = exchange_progress(op);
      if (broken_) return;
      if (complete) exchanged(op);
    }
    if (op.stage == Stage::sig_posted) {
      // The next exchange waits for this one to end: their rounds share tags.
      exchange_blocked = data_blocked = true;
      continue;
    }
    if (op.stage == Stage::sig_done) {
      if (data_blocked) continue;
      // A collective of MPI's runs blocking on the next driving thread (run_claimed), where
      // the library allows calls from several threads at once.
      if (runtime_->thread_multiple())
        op.stage = Stage::data_claimed;
      else
        post_data(op);
    }
    if (op.stage == Stage::data_claimed || op.stage == Stage::data_running) {
      data_blocked = true;
      continue;
    }
    if (op.stage == Stage::data_posted) {
      int flag = 0;
      MPI_Status status{};
      const int code = MPI_Test(&op.request, &flag, &status);
      if (code != MPI_SUCCESS) {
        break_down(error(op, ErrorCode::Internal, where(op) + ": " + MpiRuntime::describe(code)));
        return;
      }
      if (flag) data_done(op, status);
    }
    if (op.stage == Stage::sig_done || op.stage == Stage::data_posted) data_blocked = true;
  }
  if (broken_) return;
  std::erase_if(ops_, [](const std::shared_ptr<MpiOp>& op) {
    return op->stage == Stage::data_done || op->stage == Stage::failed;
  });
  const Clock::time_point now = Clock::now();
  check_control(now, /*now_anyway=*/false);
  if (!broken_) check_deadlines(now);
}

void MpiComm::post_exchange(MpiOp& op) {
  op.mine = {};
  op.mine.signature = signature_of(op.call, op.sequence());
  op.mine.level = static_cast<uint32_t>(op.level);
  if (op.local_failure) {
    op.mine.failed = 1;
    // A reason too long is cut, and says so: this rank's own error has it whole.
    std::string note = message_of(op.local_failure);
    if (note.size() >= Wire::kNote) note = note.substr(0, Wire::kNote - 4) + "...";
    std::memcpy(op.mine.note, note.data(), note.size());
  } else if (op.small && op.send_bytes > 0) {
    op.mine.payload_bytes = static_cast<uint32_t>(op.send_bytes);
    std::memcpy(op.mine.payload, op.send, op.send_bytes);
  }
  op.blocks.assign(static_cast<size_t>(size_), Wire{});
  op.blocks[0] = op.mine;
  op.have = 1;
  op.distance = 1;
  op.stage = Stage::sig_posted;
  post_round(op);
}

// Bruck's allgather over point-to-point messages: ceil(log2 p) rounds; in the round of distance
// d a rank sends the first min(d, p - have) records it holds (its own first, then those of the
// ranks after it) to rank - d and receives as many from rank + d. MPI's own non-blocking
// allgather (libnbc) costs several times the latency of this for records this small.
void MpiComm::post_round(MpiOp& op) {
  if (op.have >= size_) return;
  const int count = std::min(op.distance, size_ - op.have);
  const int bytes = count * static_cast<int>(sizeof(Wire));
  const int from = (rank_ + op.distance) % size_, to = (rank_ - op.distance + size_) % size_;
  int code = MPI_Irecv(&op.blocks[static_cast<size_t>(op.have)], bytes, MPI_BYTE, from, op.distance,
                       exchange_, &op.exchange[0]);
  if (code == MPI_SUCCESS)
    code =
        MPI_Isend(op.blocks.data(), bytes, MPI_BYTE, to, op.distance, exchange_, &op.exchange[1]);
  if (code != MPI_SUCCESS)
    break_down(error(op, ErrorCode::Internal,
                     where(op) + ": the exchange failed: " + MpiRuntime::describe(code)));
}

// Whether the exchange has completed, posting its next rounds as they come.
bool MpiComm::exchange_progress(MpiOp& op) {
  while (op.have < size_) {
    int flag = 0;
    const int code = MPI_Testall(2, op.exchange, &flag, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS) {
      break_down(error(op, ErrorCode::Internal,
                       where(op) + ": the exchange failed: " + MpiRuntime::describe(code)));
      return false;
    }
    if (!flag) return false;
    op.have += std::min(op.distance, size_ - op.have);
    op.distance *= 2;
    post_round(op);
    if (broken_) return false;
  }
  // Record j came from rank + j.
  op.gathered.resize(static_cast<size_t>(size_));
  for (int j = 0; j < size_; ++j)
    op.gathered[static_cast<size_t>((rank_ + j) % size_)] = op.blocks[static_cast<size_t>(j)];
  return true;
}

void MpiComm::exchanged(MpiOp& op) {
  // Every rank sees the same records and so decides the same: the communicator stays usable. A
  // rank that could not take part gets its own reason, the others the first such rank's.
  if (op.gathered[static_cast<size_t>(rank_)].failed) return fail_op(op, op.local_failure);
  for (int r = 0; r < size_; ++r) {
    const Wire& wire = op.gathered[static_cast<size_t>(r)];
    if (!wire.failed) continue;
    const std::string note(wire.note, strnlen(wire.note, Wire::kNote));
    return fail_op(
        op, error(op, ErrorCode::InvalidState,
                  where(op) + ": rank " + std::to_string(r) + " could not take part: " + note));
  }
  uint32_t strictest = 0;
  for (const Wire& wire : op.gathered) strictest = std::max(strictest, wire.level);
  const auto level =
      static_cast<DebugLevel>(std::min(strictest, static_cast<uint32_t>(DebugLevel::detail)));
  for (int r = 1; r < size_; ++r)
    if (auto why = mismatch(op.gathered[0].signature, 0,
                            op.gathered[static_cast<size_t>(r)].signature, r, level))
      return fail_op(
          op, error(op, ErrorCode::InvalidArgument, where(op) + ": the ranks disagree: " + *why));
  if (op.signature_only) return completed(op);
  if (op.small) {
    finish_small(op);
    return completed(op);
  }
  op.stage = Stage::sig_done;
}

void MpiComm::finish_small(MpiOp& op) {
  const CollectiveCall& call = op.call;
  const size_t p = static_cast<size_t>(size_);
  const DType dtype = (call.input.defined() ? call.input : call.output).dtype();
  const size_t element = size_of(dtype);
  auto payload = [&](size_t r) { return op.gathered[r].payload; };
  auto* out = static_cast<unsigned char*>(op.recv);
  switch (call.kind) {
    case Collective::all_reduce:
    case Collective::reduce: {
      if (call.kind == Collective::reduce && rank_ != call.root) return;
      const size_t count = op.send_bytes / element;
      std::vector<unsigned char> total(payload(0), payload(0) + op.send_bytes);
      for (size_t r = 1; r < p; ++r) reduce_into(dtype, call.op, total.data(), payload(r), count);
      if (call.op == ReduceOp::avg) divide_by_ranks(dtype, total.data(), count, size_);
      if (op.recv_bytes) std::memcpy(out, total.data(), op.recv_bytes);
      return;
    }
    case Collective::broadcast:
      if (op.recv_bytes) std::memcpy(out, payload(static_cast<size_t>(call.root)), op.recv_bytes);
      return;
    case Collective::all_gather:
      for (size_t r = 0; r < p; ++r)
        if (op.send_bytes) std::memcpy(out + r * op.send_bytes, payload(r), op.send_bytes);
      return;
    case Collective::reduce_scatter: {
      const size_t chunk = op.recv_bytes, at = static_cast<size_t>(rank_) * chunk;
      std::vector<unsigned char> total(payload(0) + at, payload(0) + at + chunk);
      for (size_t r = 1; r < p; ++r)
        reduce_into(dtype, call.op, total.data(), payload(r) + at, chunk / element);
      if (call.op == ReduceOp::avg) divide_by_ranks(dtype, total.data(), chunk / element, size_);
      if (chunk) std::memcpy(out, total.data(), chunk);
      return;
    }
    case Collective::all_to_all: {
      const size_t chunk = op.send_bytes / p, at = static_cast<size_t>(rank_) * chunk;
      for (size_t r = 0; r < p; ++r)
        if (chunk) std::memcpy(out + r * chunk, payload(r) + at, chunk);
      return;
    }
    case Collective::barrier:
    case Collective::send:
    case Collective::recv:
      return;
  }
}

void MpiComm::run_claimed() {
  std::shared_ptr<MpiOp> claimed;
  {
    std::lock_guard lock(mutex_);
    for (const std::shared_ptr<MpiOp>& op : ops_)
      if (op->stage == Stage::data_claimed) {
        claimed = op;
        break;
      }
    if (!claimed) return;
    claimed->stage = Stage::data_running;
  }
  MpiOp& op = *claimed;
  injected_stall("HAL_DIST_INJECT_STALL", rank_);
  // From the blocking call's start: collectives of several streams run their data phases one
  // at a time, and one's wait behind another's counted against it ended a healthy job.
  const uint64_t ticket =
      runtime_->watch(Clock::now() + op.patience,
                      [self = shared_from_this(), claimed] { self->abort_blocked(*claimed); });
  MPI_Status status{};
  const int code = call_blocking(op, status);
  runtime_->unwatch(ticket);
  std::lock_guard lock(mutex_);
  if (broken_) return;
  if (code != MPI_SUCCESS)
    return break_down(
        error(op, ErrorCode::Internal, where(op) + ": " + MpiRuntime::describe(code)));
  data_done(op, status);
  std::erase_if(ops_, [](const std::shared_ptr<MpiOp>& o) {
    return o->stage == Stage::data_done || o->stage == Stage::failed;
  });
}

int MpiComm::call_blocking(MpiOp& op, MPI_Status& status) {
  const CollectiveCall& call = op.call;
  const Tensor& t = call.input.defined() ? call.input : call.output;
  const MPI_Datatype type = runtime_->datatype(t.dtype());
  const int count = static_cast<int>(t.numel());  // fits: submit refused more (count_refusal)
  const bool in_place = op.send == op.recv;
  status = MPI_Status{};
  switch (call.kind) {
    case Collective::all_reduce:
      return MPI_Allreduce(in_place ? MPI_IN_PLACE : op.send, op.recv, count, type,
                           runtime_->op(call.op, t.dtype()), data_);
    case Collective::broadcast:
      return MPI_Bcast(op.recv, count, type, call.root, data_);
    case Collective::reduce: {
      const bool root = rank_ == call.root;
      return MPI_Reduce(root && in_place ? MPI_IN_PLACE : op.send, root ? op.recv : nullptr, count,
                        type, runtime_->op(call.op, t.dtype()), call.root, data_);
    }
    case Collective::all_gather:
      return MPI_Allgather(op.send, count, type, op.recv, count, type, data_);
    case Collective::reduce_scatter:
      return MPI_Reduce_scatter_block(op.send, op.recv, static_cast<int>(call.output.numel()), type,
                                      runtime_->op(call.op, t.dtype()), data_);
    case Collective::all_to_all:
      return MPI_Alltoall(op.send, count / size_, type, op.recv, count / size_, type, data_);
    case Collective::send:
    case Collective::recv:
    case Collective::barrier:
      break;
  }
  return MPI_ERR_INTERN;  // never claimed: point to point and barriers do not come here
}

void MpiComm::abort_blocked(const MpiOp& op) {
  std::string message;
  {
    std::lock_guard lock(mutex_);
    try {
      std::rethrow_exception(roll_call(op, {}));
    } catch (const Error& e) {
      message = e.message();
    }
  }
  end_job(message +
          "; MPI cannot cancel the blocking collective it runs, so the job ends (MPI_Abort)");
}

void MpiComm::post_data(MpiOp& op) {
  const CollectiveCall& call = op.call;
  const Tensor& t = call.input.defined() ? call.input : call.output;
  const MPI_Datatype type = runtime_->datatype(t.dtype());
  const int count = static_cast<int>(t.numel());  // fits: submit refused more (count_refusal)
  const bool in_place = op.send == op.recv;
  int code = MPI_SUCCESS;
  switch (call.kind) {
    case Collective::all_reduce:
      code = MPI_Iallreduce(in_place ? MPI_IN_PLACE : op.send, op.recv, count, type,
                            runtime_->op(call.op, t.dtype()), data_, &op.request);
      break;
    case Collective::broadcast:
      code = MPI_Ibcast(op.recv, count, type, call.root, data_, &op.request);
      break;
    case Collective::reduce: {
      const bool root = rank_ == call.root;
      code = MPI_Ireduce(root && in_place ? MPI_IN_PLACE : op.send, root ? op.recv : nullptr, count,
                         type, runtime_->op(call.op, t.dtype()), call.root, data_, &op.request);
      break;
    }
    case Collective::all_gather:
      code = MPI_Iallgather(op.send, count, type, op.recv, count, type, data_, &op.request);
      break;
    case Collective::reduce_scatter:
      code = MPI_Ireduce_scatter_block(op.send, op.recv, static_cast<int>(call.output.numel()),
                                       type, runtime_->op(call.op, t.dtype()), data_, &op.request);
      break;
    case Collective::all_to_all:
      code = MPI_Ialltoall(op.send, count / size_, type, op.recv, count / size_, type, data_,
                           &op.request);
      break;
    case Collective::send:
      code =
          MPI_Isend(op.send, count, type, call.root, wire_tag(op, t.dtype()), data_, &op.request);
      break;
    case Collective::recv:
      if (sequence_bits_ >= 0) {
        op.stage = Stage::matching;  // match_recv finds and checks its message first
        return;
      }
      code = MPI_Irecv(op.recv, count, type, call.root, call.tag, data_, &op.request);
      break;
    case Collective::barrier:
      return completed(op);  // the exchange was the barrier
  }
  if (code != MPI_SUCCESS)
    return break_down(error(op, ErrorCode::Internal,
                            where(op) + ": posting it failed: " + MpiRuntime::describe(code)));
  op.stage = Stage::data_posted;
}

int MpiComm::wire_tag(const MpiOp& op, DType dtype) const {
  if (sequence_bits_ < 0) return op.call.tag;
  const uint64_t number = op.sequence() & ((uint64_t{1} << sequence_bits_) - 1);
  return static_cast<int>((number << (kUserTagBits + kDTypeBits)) |
                          (static_cast<uint64_t>(dtype) << kUserTagBits) |
                          static_cast<uint64_t>(op.call.tag));
}

void MpiComm::match_recv(MpiOp& op) {
  const DType expected = op.call.output.dtype();
  if (probe_as(op, expected)) return;
  for (DType sent : kAllDTypes)
    if (sent != expected && probe_as(op, sent)) return;
}

// Whether the message of `op`'s number came from its peer in `sent` (or MPI failed); if it
// came, it is taken.
bool MpiComm::probe_as(MpiOp& op, DType sent) {
  int found = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status{};
  const int code = MPI_Improbe(op.call.root, wire_tag(op, sent), data_, &found, &message, &status);
  if (code != MPI_SUCCESS) {
    break_down(error(op, ErrorCode::Internal,
                     where(op) + ": MPI_Improbe failed: " + MpiRuntime::describe(code)));
    return true;
  }
  if (!found) return false;
  take_message(op, sent, message, status);
  return true;
}

void MpiComm::take_message(MpiOp& op, DType sent, MPI_Message& message, const MPI_Status& status) {
  const Tensor& into = op.call.output;
  const MPI_Datatype type = runtime_->datatype(sent);
  int count = 0;  // of whole elements of `sent`: what the sender passed to MPI_Isend
  MPI_Get_count(&status, type, &count);
  if (count == MPI_UNDEFINED) count = 0;
  int code = MPI_SUCCESS;
  if (sent == into.dtype() && count == into.numel()) {
    code = MPI_Imrecv(op.recv, count, type, &message, &op.request);
  } else {
    // Received aside all the same: left in MPI, it would hold its sender, or meet a later recv.
    op.refusal = error(op, ErrorCode::InvalidArgument,
                       where(op) + ": rank " + std::to_string(op.call.root) + " sent " +
                           elements_text(count, sent) + "; the receiving tensor " +
                           into.describe() + " holds " + elements_text(into.numel(), into.dtype()));
    op.refused_data.resize(static_cast<size_t>(count) * size_of(sent));
    code = MPI_Imrecv(op.refused_data.data(), count, type, &message, &op.request);
  }
  if (code != MPI_SUCCESS)
    return break_down(error(op, ErrorCode::Internal,
                            where(op) + ": MPI_Imrecv failed: " + MpiRuntime::describe(code)));
  op.stage = Stage::data_posted;
}

void MpiComm::data_done(MpiOp& op, const MPI_Status& status) {
  const CollectiveCall& call = op.call;
  if (call.kind == Collective::recv) {
    int received = 0;
    MPI_Get_count(&status, runtime_->datatype(call.output.dtype()), &received);
    if (received != call.output.numel())
      return fail_op(
          op, error(op, ErrorCode::InvalidArgument,
                    where(op) + ": rank " + std::to_string(call.root) + " sent " +
                        std::to_string(received) + " elements; the receiving tensor " +
                        call.output.describe() + " holds " + std::to_string(call.output.numel())));
  }
  const bool writes = call.kind == Collective::all_reduce ||
                      call.kind == Collective::reduce_scatter ||
                      (call.kind == Collective::reduce && rank_ == call.root);
  if (call.op == ReduceOp::avg && writes && op.recv)
    divide_by_ranks(call.output.dtype(), op.recv, static_cast<size_t>(call.output.numel()), size_);
  completed(op);
}

void MpiComm::completed(MpiOp& op) {
  // Off the root a reduce writes nothing; a send writes nothing.
  if (op.call.kind == Collective::reduce && rank_ != op.call.root) op.stage_out = false;
  op.stage = Stage::data_done;
  endings_.fetch_add(1, std::memory_order_release);
  if (!op.stage_out) op.finish();
}

void MpiComm::fail_op(MpiOp& op, std::exception_ptr failure) {
  op.failure = failure;
  op.stage = Stage::failed;
  endings_.fetch_add(1, std::memory_order_release);
  op.finish(std::move(failure));
}

void MpiComm::break_down(std::exception_ptr failure) {
  broken_ = failure;
  runtime_->communicator_broken(message_of(failure));
  for (const std::shared_ptr<MpiOp>& op : ops_) {
    if (op->stage == Stage::sig_posted || op->stage == Stage::data_posted)
      abandoned_.push_back(op);  // MPI may still write its memory
    if (op->stage != Stage::data_done) fail_op(*op, failure);
  }
  ops_.clear();
}

// ---- faults ----

void MpiComm::send_control(int to, int type, const MpiOp* op) {
  control_messages_.push_back({static_cast<uint64_t>(type), op ? op->sequence() : 0,
                               op ? static_cast<uint64_t>(op->kind()) : 0});
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Isend(control_messages_.back().data(), 3, MPI_UINT64_T, to, kControlTag, control_,
                &request) == MPI_SUCCESS)
    MPI_Request_free(&request);
}

void MpiComm::check_control(Clock::time_point now, bool now_anyway) {
  if (ops_.empty()) return;
  if (!now_anyway && now - last_control_check_ < std::chrono::milliseconds(1)) return;
  last_control_check_ = now;
  Answers gave_up;
  // Open MPI's probe looks at what has arrived, then advances: once to take in what waits.
  int primed = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, kControlTag, control_, &primed, MPI_STATUS_IGNORE);
  for (;;) {
    int flag = 0;
    MPI_Status status{};
    if (MPI_Iprobe(MPI_ANY_SOURCE, kControlTag, control_, &flag, &status) != MPI_SUCCESS || !flag)
      break;
    std::array<uint64_t, 3> message{};
    MPI_Recv(message.data(), 3, MPI_UINT64_T, status.MPI_SOURCE, kControlTag, control_,
             MPI_STATUS_IGNORE);
    if (message[0] == kAbandon) gave_up[status.MPI_SOURCE] = message;
  }
  if (gave_up.empty()) return;
  // The oldest op this rank has posted: if another rank gave up on it, this rank was in it too
  // and takes the roll call; if it has posted none, this rank came late.
  const MpiOp* posted = nullptr;
  for (const std::shared_ptr<MpiOp>& op : ops_)
    if (!point_to_point(op->kind()) &&
        (op->stage == Stage::sig_posted || op->stage == Stage::data_posted)) {
      posted = op.get();
      break;
    }
  if (posted) return break_down(roll_call(*posted, gave_up));
  std::string text;
  for (const auto& [from, message] : gave_up) {
    text += (text.empty() ? "" : ", ") + std::string("rank ") + std::to_string(from) + " gave up " +
            std::string(to_string(static_cast<Collective>(message[2]))) + " #" +
            std::to_string(message[1]);
    send_control(from, kPresent, ops_.front().get());
  }
  const MpiOp& first = *ops_.front();
  break_down(error(first, ErrorCode::Timeout,
                   where(first) + ": " + text +
                       " after waiting HAL_DIST_TIMEOUT for the others (this rank came late); "
                       "the communicator is unusable"));
}

void MpiComm::check_deadlines(Clock::time_point now) {
  for (const std::shared_ptr<MpiOp>& op : ops_) {
    const Stage stage = op->stage;
    if (stage != Stage::sig_posted && stage != Stage::matching && stage != Stage::data_posted)
      continue;
    if (now < op->ready_at + op->patience - grace_of(op->patience)) continue;
    const std::string waited = format_seconds(std::chrono::duration<double>(op->patience).count());
    if (point_to_point(op->kind())) {
      const bool sending = op->kind() == Collective::send;
      return break_down(error(*op, ErrorCode::Timeout,
                              where(*op) + ": rank " + std::to_string(op->call.root) + " did not " +
                                  (sending ? "receive" : "send") + " within " + waited +
                                  " (HAL_DIST_TIMEOUT); the communicator is unusable"));
    }
    return break_down(roll_call(*op, {}));
  }
}

std::exception_ptr MpiComm::roll_call(const MpiOp& late, const Answers& gave_up) {
  for (int r = 0; r < size_; ++r)
    if (r != rank_) send_control(r, kAbandon, &late);
  Answers answered = gave_up;  // who gave up first was there
  answered[rank_] = {kPresent, late.sequence(), static_cast<uint64_t>(late.kind())};
  const Clock::time_point until = Clock::now() + grace_of(late.patience);
  while (static_cast<int>(answered.size()) < size_ && Clock::now() < until) {
    int flag = 0;
    MPI_Status status{};
    if (MPI_Iprobe(MPI_ANY_SOURCE, kControlTag, control_, &flag, &status) != MPI_SUCCESS) break;
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    std::array<uint64_t, 3> message{};
    MPI_Recv(message.data(), 3, MPI_UINT64_T, status.MPI_SOURCE, kControlTag, control_,
             MPI_STATUS_IGNORE);
    answered[status.MPI_SOURCE] = message;
    if (message[0] == kAbandon) send_control(status.MPI_SOURCE, kPresent, &late);
  }
  std::vector<int> absent, present, elsewhere;
  for (int r = 0; r < size_; ++r) {
    auto it = answered.find(r);
    if (it == answered.end())
      absent.push_back(r);
    else if (it->second[1] == late.sequence() &&
             it->second[2] == static_cast<uint64_t>(late.kind()))
      present.push_back(r);
    else
      elsewhere.push_back(r);
  }
  std::string text = where(late) + " did not complete within " +
                     format_seconds(std::chrono::duration<double>(late.patience).count()) +
                     " (HAL_DIST_TIMEOUT): ";
  if (!absent.empty())
    text += ranks_word(absent.size()) + list(absent) +
            " did not answer (stalled, dead, or not in this collective); ";
  if (!elsewhere.empty()) {
    text += ranks_word(elsewhere.size()) + list(elsewhere) + " answered from another collective (";
    for (size_t i = 0; i < elsewhere.size(); ++i) {
      const auto& m = answered[elsewhere[i]];
      text += (i ? ", " : "") + std::string(to_string(static_cast<Collective>(m[2]))) + " #" +
              std::to_string(m[1]);
    }
    text += "); ";
  }
  text += ranks_word(present.size()) + list(present) + " waited in it";
  if (!gave_up.empty()) {
    std::vector<int> first;
    for (const auto& entry : gave_up) first.push_back(entry.first);
    text += " (" + ranks_word(first.size()) + list(first) + " gave up first)";
  }
  return error(late, ErrorCode::Timeout, text + "; the communicator is unusable");
}

}  // namespace hal::dist::detail

namespace hal::dist {

Communicator Communicator::world() { return Communicator(detail::world_comm()); }

bool mpi_built() { return true; }

}  // namespace hal::dist
