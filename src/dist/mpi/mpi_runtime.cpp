#include "dist/mpi/mpi_runtime.hpp"

#include <mpi-ext.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "dist/host_reduce.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"

namespace hal::dist::detail {
namespace {

std::mutex instance_mutex;
// Never destroyed: the watchdog's thread, detached, waits on the runtime until the process ends.
std::shared_ptr<MpiRuntime>& instance() {
  static auto* runtime = new std::shared_ptr<MpiRuntime>();
  return *runtime;
}

void finalize_at_exit() {
  std::shared_ptr<MpiRuntime> runtime;
  {
    std::lock_guard lock(instance_mutex);
    runtime = instance();
  }
  if (runtime) runtime->finalize();
}

template <DType Dtype, ReduceOp Op>
void host_op(void* in, void* inout, int* length, MPI_Datatype*) {
  // MPI's user function: `inout` = `in` (op) `inout`; the ops are commutative.
  reduce_into(Dtype, Op, inout, in, static_cast<size_t>(*length));
}

using UserFunction = void (*)(void*, void*, int*, MPI_Datatype*);

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return 0;
    case ReduceOp::prod:
      return 1;
    case ReduceOp::min:
      return 2;
    case ReduceOp::max:
      return 3;
  }
  return 0;
}

}  // namespace

std::shared_ptr<MpiRuntime> MpiRuntime::get() {
  std::lock_guard lock(instance_mutex);
  std::shared_ptr<MpiRuntime>& runtime = instance();
  if (!runtime) {
    std::shared_ptr<MpiRuntime> made(new MpiRuntime());
    made->start();
    runtime = made;
  }
  if (runtime->finalized())
    throw Error(ErrorCode::InvalidState, "MPI is finalised: no MPI communicator can be used now");
  return runtime;
}

void MpiRuntime::start() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw Error(ErrorCode::InvalidState, "MPI was finalised before hal first used it");
  if (!initialized) {
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided_), "hal dist",
              "MPI_Init_thread");
    by_hal_ = true;
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided_);
  }
  if (provided_ < MPI_THREAD_SERIALIZED)
    throw Error(ErrorCode::Unsupported,
                "MPI was initialised with thread level " + std::to_string(provided_) +
                    "; hal's MPI engine calls MPI from its streams' threads: initialise MPI with "
                    "MPI_THREAD_MULTIPLE (or MPI_THREAD_SERIALIZED)");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  cuda_aware_ = MPIX_Query_cuda_support() == 1;  // the library's answer, at run time
#endif
  create_ops();
  read_tag_bound();
  log(LogLevel::debug, std::string("hal dist: MPI ") + (by_hal_ ? "initialised by hal" : "in use") +
                           ", thread level " + std::to_string(provided_) +
                           (cuda_aware_ ? ", CUDA-aware" : ", not CUDA-aware"));
}

void MpiRuntime::create_ops() {
  static constexpr UserFunction kHalf[2][4] = {
      {host_op<DType::f16, ReduceOp::sum>, host_op<DType::f16, ReduceOp::prod>,
       host_op<DType::f16, ReduceOp::min>, host_op<DType::f16, ReduceOp::max>},
      {host_op<DType::bf16, ReduceOp::sum>, host_op<DType::bf16, ReduceOp::prod>,
       host_op<DType::bf16, ReduceOp::min>, host_op<DType::bf16, ReduceOp::max>}};
  // MPI_MAX and MPI_MIN leave NaN to the C comparison, which keeps or drops it by the ranks'
  // order; hal's own propagate it, as torch and hal's small collectives do.
  static constexpr UserFunction kFloat[2][2] = {
      {host_op<DType::f32, ReduceOp::min>, host_op<DType::f32, ReduceOp::max>},
      {host_op<DType::f64, ReduceOp::min>, host_op<DType::f64, ReduceOp::max>}};
  for (int d = 0; d < 2; ++d) {
    for (int o = 0; o < 4; ++o)
      check_mpi(MPI_Op_create(kHalf[d][o], /*commute=*/1, &half_ops_[d][o]), "hal dist",
                "MPI_Op_create");
    for (int o = 0; o < 2; ++o)
      check_mpi(MPI_Op_create(kFloat[d][o], /*commute=*/1, &float_ops_[d][o]), "hal dist",
                "MPI_Op_create");
  }
}

void MpiRuntime::read_tag_bound() {
  int* bound = nullptr;
  int found = 0;
  // The same on every process of the job (MPI's attribute of MPI_COMM_WORLD).
  if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &bound, &found) == MPI_SUCCESS && found &&
      bound != nullptr)
    tag_ub_ = *bound;
}

MpiRuntime::~MpiRuntime() = default;

std::unique_lock<std::mutex> MpiRuntime::serialize() {
  if (provided_ >= MPI_THREAD_MULTIPLE) return {};
  return std::unique_lock(serial_);
}

bool MpiRuntime::finalized() const {
  std::lock_guard lock(mutex_);
  if (finalized_) return true;
  int done = 0;
  MPI_Finalized(&done);  // the application may finalise MPI itself
  return done != 0;
}

void MpiRuntime::communicator_broken(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (broken_.empty()) broken_ = why.empty() ? "a communicator failed" : why;
}

void MpiRuntime::finalize() {
  std::string broken;
  {
    std::lock_guard lock(mutex_);
    if (finalized_) return;
    finalized_ = true;
    broken = broken_;
  }
  if (!broken.empty()) {
    // At exit hal's logger may already be gone: stderr, as the watchdog writes.
    if (by_hal_)
      std::fprintf(stderr,
                   "hal: MPI left unfinalised at exit: a communicator broke down (%s); "
                   "MPI_Finalize would wait for ranks that may be gone\n",
                   broken.c_str());
    return;
  }
  int done = 0;
  MPI_Finalized(&done);
  if (done) return;
  free_ops();
  if (by_hal_) finalize_within_bound();
}

void MpiRuntime::free_ops() {
  auto free_all = [](auto& table) {
    for (auto& ops : table)
      for (MPI_Op& op : ops)
        if (op != MPI_OP_NULL && op != nullptr) MPI_Op_free(&op);
  };
  free_all(half_ops_);
  free_all(float_ops_);
}

void MpiRuntime::finalize_within_bound() {
  // MPI_Finalize waits for every process of the job: for one still at work (a checkpoint) as
  // for one that left without finalising, and this process cannot tell them apart. So hal waits
  // as MPI does (plain mpirun ends the job once a process exits unfinalised), unless
  // HAL_DIST_FINALIZE_TIMEOUT bounds it (for --enable-recovery, where mpirun does not).
  std::optional<Clock::duration> bound;
  try {
    bound = finalize_timeout();
  } catch (const Error& e) {  // too late to throw: said, and MPI waits as it would
    std::fprintf(stderr, "hal: %s; MPI_Finalize waits without a bound\n", e.message().c_str());
  }
  if (!bound) {
    MPI_Finalize();
    return;
  }
  const double seconds = std::chrono::duration<double>(*bound).count();
  const uint64_t ticket = watch(Clock::now() + *bound, [seconds] {
    std::fprintf(stderr,
                 "hal: MPI_Finalize did not complete within %.2f s (HAL_DIST_FINALIZE_TIMEOUT): "
                 "another process of the job left without finalising (after a fault, or dead), "
                 "or is still working; this one exits without it\n",
                 seconds);
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  });
  MPI_Finalize();
  unwatch(ticket);
}

MPI_Datatype MpiRuntime::datatype(DType dtype) const {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::f16:
    case DType::bf16:
      return MPI_UINT16_T;
    case DType::i8:
      return MPI_INT8_T;
    case DType::u8:
    case DType::boolean:
      return MPI_UINT8_T;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::i16:
      return MPI_INT16_T;
    case DType::u16:
      return MPI_UINT16_T;
    case DType::u32:
      return MPI_UINT32_T;
    case DType::u64:
      return MPI_UINT64_T;
  }
  throw Error(ErrorCode::Internal, "MPI datatype of an unknown dtype");
}

MPI_Op MpiRuntime::op(ReduceOp op, DType dtype) const {
  if (dtype == DType::f16 || dtype == DType::bf16)
    return half_ops_[dtype == DType::f16 ? 0 : 1][op_index(op)];
  if ((dtype == DType::f32 || dtype == DType::f64) && (op == ReduceOp::min || op == ReduceOp::max))
    return float_ops_[dtype == DType::f32 ? 0 : 1][op == ReduceOp::max ? 1 : 0];
  if (dtype == DType::boolean)  // bytes of 0 and 1: or is max, and is min
    return (op == ReduceOp::sum || op == ReduceOp::max) ? MPI_MAX : MPI_MIN;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return MPI_SUM;
    case ReduceOp::prod:
      return MPI_PROD;
    case ReduceOp::min:
      return MPI_MIN;
    case ReduceOp::max:
      return MPI_MAX;
  }
  return MPI_SUM;
}

uint64_t MpiRuntime::watch(Clock::time_point deadline, std::function<void()> on_overrun) {
  std::lock_guard lock(watch_mutex_);
  const uint64_t ticket = ++next_ticket_;
  watched_[ticket] = {deadline, std::move(on_overrun)};
  if (!watchdog_started_) {  // one thread for the process, detached: it ends with the process
    watchdog_started_ = true;
    std::thread([this] { watchdog_loop(); }).detach();
  }
  watch_changed_.notify_all();
  return ticket;
}

void MpiRuntime::unwatch(uint64_t ticket) {
  std::lock_guard lock(watch_mutex_);
  watched_.erase(ticket);
}

void MpiRuntime::watchdog_loop() {
  std::unique_lock lock(watch_mutex_);
  for (;;) {
    Clock::time_point next = Clock::now() + std::chrono::seconds(1);
    for (const auto& [ticket, entry] : watched_) next = std::min(next, entry.first);
    watch_changed_.wait_until(lock, next);
    const Clock::time_point now = Clock::now();
    for (auto& [ticket, entry] : watched_)
      if (entry.first <= now) {
        std::function<void()> overrun = std::move(entry.second);
        watched_.erase(ticket);
        lock.unlock();
        overrun();  // ends the job
        lock.lock();
        break;
      }
  }
}

std::string MpiRuntime::describe(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length)) + " (" + std::to_string(code) + ")";
}

void check_mpi(int code, const std::string& where, const char* call) {
  if (code == MPI_SUCCESS) [[likely]]
    return;
  throw Error(ErrorCode::Internal, where + ": " + call + " failed: " + MpiRuntime::describe(code),
              code);
}

}  // namespace hal::dist::detail
