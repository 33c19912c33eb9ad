// A served model: its queue (bounded, by priority level), the dynamic batcher that stacks
// compatible requests, the balancer that sends each batch to an instance, and one worker
// thread per instance. A batch that fails on its device takes that instance out of rotation
// and goes back to the queue for the others; one whose outputs do not split by rows runs its
// requests again one by one, and the model's batches hold one request from then on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hal/error.hpp"
#include "hal/serve.hpp"
#include "serve/balancer.hpp"
#include "serve/infer_codec.hpp"
#include "serve/metrics.hpp"
#include "serve/model_instance.hpp"

namespace hal::serve {

using Clock = std::chrono::steady_clock;

// What a request gets back: outputs (status 200) or a status and message.
struct Outcome {
  int status = 200;
  std::string message;
  HostTensors outputs;
};

struct InstanceStatus {
  std::string device;
  bool healthy = true;
  double busy_ratio = 0;  // time running batches / time since the server started
  double memory_used_bytes = 0;
  int64_t outstanding_requests = 0;
};

// What a failed warm-up run (zeros, every free dimension 1) means for its instance, logged
// naming the model, the device and the error. A fault of those made-up inputs (InvalidArgument,
// OutOfRange: a 3x3 convolution of a 1x1 image) keeps the instance in rotation, logged at warn:
// real requests bring other shapes. Any other error (the device's; Unsupported, a kernel the
// device lacks; out of memory, which the smallest input meets only where the model does not fit
// the device) takes it out, logged at error. Whether the instance stays in rotation.
bool survives_warm_up_failure(const std::string& model, const std::string& device,
                              const Error& error);

class ModelScheduler {
 public:
  ModelScheduler(const ModelConfig& config, Balancer balancer, Metrics& metrics);
  ~ModelScheduler();  // answers what is still queued 503 and joins its threads

  const ModelSignature& signature() const { return signature_; }
  // Queues the request; RequestError 503 where the queue is full, the model is draining or
  // no instance is healthy.
  std::future<Outcome> submit(InferRequest request);
  bool ready() const;
  int64_t queue_depth() const;
  int64_t outstanding() const;  // queued or running
  std::vector<InstanceStatus> instances() const;
  // Refuses new requests from now on (503).
  void stop_accepting();
  // Waits until nothing is queued or running, up to `deadline`; whether that happened.
  bool wait_idle(Clock::time_point deadline);
  // Answers 503 every request that has not begun to run (queued, or in a batch waiting behind
  // a running one); the batches running finish and answer. How many were answered so.
  int64_t cut_off_unstarted();

 private:
  struct Pending;
  struct Batch;
  struct Worker;

  void schedule();
  // Under the lock: sends every batch that can go now; returns when the scheduler must look
  // again (the head's delay ending), or time_point::max() for "when something changes".
  // Instances given a batch are woken, or listed in `woken` for the caller to wake.
  Clock::time_point dispatch_ready(std::vector<Worker*>* woken = nullptr);
  // Under the lock: queued requests join batches that wait behind a running one (see .cpp).
  void top_up_waiting_batches(int64_t max_rows);
  void work(Worker& worker);
  // Under the lock (released while it runs): runs the worker's first batch and answers it.
  void run_front(Worker& worker, std::unique_lock<std::mutex>& lock);
  void finish(const std::shared_ptr<Pending>& pending, Outcome outcome);
  // Under the lock: each request of `batch` runs again by itself, first on `worker`.
  void run_each_alone(Worker& worker, Batch batch);
  // Under the lock: `worker`'s device failed running `failed`; see the .cpp.
  void fail_instance(Worker& worker, Batch failed, const Error& error);
  void requeue(std::vector<std::shared_ptr<Pending>> pendings, const std::string& reason);
  void expire(Clock::time_point now);
  double work_ahead_s(const Worker& worker, Clock::time_point now) const;
  std::vector<InstanceLoad> loads(int64_t rows) const;
  void fail_all_queued(int status, const std::string& message);
  // Under the lock: cut_off_unstarted's work.
  int64_t answer_unstarted(int status);

  ModelConfig config_;
  Balancer balancer_;
  Metrics& metrics_;
  ModelSignature signature_;
  Clock::time_point started_ = Clock::now();

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // queue or instances changed: the scheduler looks again
  std::condition_variable idle_;     // outstanding_ reached 0
  std::vector<std::deque<std::shared_ptr<Pending>>> levels_;  // by priority, 1 first
  int64_t queued_ = 0, outstanding_ = 0;
  bool accepting_ = true, stopping_ = false;
  // Set once a batch's outputs did not split by rows: each batch holds one request from then on.
  bool batch_singly_ = false;
  size_t next_ = 0;  // round-robin cursor
  std::vector<std::unique_ptr<Worker>> workers_;
  std::thread scheduler_;
};

}  // namespace hal::serve
