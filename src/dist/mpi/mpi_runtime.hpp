// MPI for hal: initialised on first use (MPI_THREAD_MULTIPLE) unless the application did it,
// finalised at exit if hal initialised it; the datatypes and reduction ops of hal's dtypes
// (f16 and bf16, and f32 and f64 min and max, through user ops); whether the library is
// CUDA-aware; its largest tag.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "dist/settings.hpp"
#include "hal/dist.hpp"

namespace hal::dist::detail {

class MpiRuntime {
 public:
  // Initialises MPI the first time. InvalidState after MPI_Finalize; Unsupported when the
  // application initialised MPI below MPI_THREAD_SERIALIZED (hal calls MPI from stream
  // threads).
  static std::shared_ptr<MpiRuntime> get();
  ~MpiRuntime();

  bool cuda_aware() const { return cuda_aware_; }
  // MPI_THREAD_MULTIPLE: nothing to hold; SERIALIZED: one MPI call at a time in the process.
  std::unique_lock<std::mutex> serialize();
  // True once MPI is finalised: handles are then left alone.
  bool finalized() const;

  MPI_Datatype datatype(DType dtype) const;
  // The reduction of `op` in `dtype` (avg: sum, which the caller divides; bool: logic on
  // bytes; floating min and max: NaN wins, whatever the order of the ranks).
  MPI_Op op(ReduceOp op, DType dtype) const;
  // MPI_TAG_UB: the largest tag a message may carry (32767 at least; the same on every process).
  int tag_ub() const { return tag_ub_; }

  // "MPI_ERR_TRUNCATE: message truncated" for an error code.
  static std::string describe(int code);

  // Frees hal's user ops and finalises MPI if hal initialised it (at exit; callable early),
  // unless a communicator broke down first (communicator_broken): then MPI is left as it is.
  void finalize();
  // A communicator is unusable: its peers did not answer (dead or stalled) or MPI failed, and
  // it keeps requests MPI may never complete. MPI_Finalize would wait for those peers (Open
  // MPI's waits for every process of the job, a dead one too) and may not be called with
  // requests pending, so finalize() skips it: the process can still return from main.
  void communicator_broken(const std::string& why);

  bool thread_multiple() const { return provided_ >= MPI_THREAD_MULTIPLE; }
  // The watchdog of blocking collectives: `on_overrun` runs on its thread once `deadline`
  // passes before `unwatch(ticket)`.
  uint64_t watch(Clock::time_point deadline, std::function<void()> on_overrun);
  void unwatch(uint64_t ticket);

 private:
  MpiRuntime() = default;
  void start();
  void create_ops();
  void free_ops();
  void read_tag_bound();
  // MPI_Finalize; with HAL_DIST_FINALIZE_TIMEOUT set, past it a line on stderr and
  // _Exit(EXIT_FAILURE).
  void finalize_within_bound();

  bool by_hal_ = false;
  bool cuda_aware_ = false;
  int provided_ = 0;
  mutable std::mutex mutex_;  // guards finalized_ and broken_
  bool finalized_ = false;
  std::string broken_;  // the first communicator_broken's reason
  std::mutex serial_;
  // f16 and bf16, each for sum, prod, min, max.
  MPI_Op half_ops_[2][4] = {};
  // f32 and f64, each for min and max.
  MPI_Op float_ops_[2][2] = {};
  int tag_ub_ = 32767;  // MPI's guaranteed least until read

  void watchdog_loop();
  std::mutex watch_mutex_;
  std::condition_variable watch_changed_;
  std::map<uint64_t, std::pair<Clock::time_point, std::function<void()>>> watched_;
  uint64_t next_ticket_ = 0;
  bool watchdog_started_ = false;  // by the first watch
};

// Throws hal::Error for a failed MPI call: "<where>: <call> failed: <MPI's message>".
void check_mpi(int code, const std::string& where, const char* call);

}  // namespace hal::dist::detail
