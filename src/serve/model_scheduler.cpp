#include "serve/model_scheduler.hpp"

#include <algorithm>

#include "hal/allocator.hpp"
#include "hal/error.hpp"
#include "hal/log.hpp"
#include "serve/batch_failure.hpp"
#include "serve/request_error.hpp"

namespace hal::serve {
namespace {

// Every wait is bounded: a missed notification costs at most this long.
constexpr auto kPoll = std::chrono::milliseconds(100);

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Now + timeout_us, or no deadline where that lies past what the clock holds: timeout_us may be
// up to INT64_MAX / 1000 microseconds, which as steady_clock's nanoseconds from now overflows.
Clock::time_point deadline_after(Clock::time_point from, int64_t timeout_us) {
  const auto room =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::time_point::max() - from);
  if (std::chrono::microseconds(timeout_us) >= room) return Clock::time_point::max();
  return from + std::chrono::microseconds(timeout_us);
}

// The warm-up's inputs: zeros, every free dimension 1; optional inputs left to their defaults.
HostTensors warm_up_inputs(const ModelSignature& signature) {
  HostTensors zeros;
  for (const TensorSpec& spec : signature.inputs) {
    if (spec.optional) continue;
    HostTensor t{spec.dtype, {}, {}};
    for (int64_t d : spec.shape) t.shape.push_back(d < 0 ? 1 : d);
    t.bytes.assign(static_cast<size_t>(element_count(t.shape)) * size_of(spec.dtype), '\0');
    zeros[spec.name] = std::move(t);
  }
  return zeros;
}

// A first run on each device uploads its weights, so that no request pays for it; the second
// run's time is the first measurement (the first's includes the upload and first-use costs,
// which would keep the balancer off a fast device it then never measures again). Whether the
// instance goes into rotation.
bool warm_up(ModelInstance& instance, const ModelSignature& signature, const HostTensors& zeros) {
  try {
    instance.run(signature, {&zeros}, {1});
    const auto start = Clock::now();
    instance.run(signature, {&zeros}, {1});
    instance.record(1, seconds_between(start, Clock::now()));
    return true;
  } catch (const Error& error) {
    return survives_warm_up_failure(signature.name, instance.device().id(), error);
  }
}

}  // namespace

bool survives_warm_up_failure(const std::string& model, const std::string& device,
                              const Error& error) {
  // Only what the made-up input's values and sizes cause: a device without a kernel the model
  // needs (Unsupported) would answer every request sent to it 400, and out of memory at the
  // smallest input means the model does not fit there.
  if (error.code() == ErrorCode::InvalidArgument || error.code() == ErrorCode::OutOfRange) {
    log(LogLevel::warn,
        "hal serve: model '" + model + "' on " + device +
            ": the warm-up run on zeros (every free dimension 1) failed: " + error.what() +
            "; the instance stays in rotation, and its first request pays for "
            "the upload");
    return true;
  }
  log(LogLevel::error, "hal serve: model '" + model + "' on " + device +
                           " is out of rotation: its warm-up run failed: " + error.what());
  return false;
}

struct ModelScheduler::Pending {
  InferRequest request;
  Clock::time_point arrived = Clock::now();
  Clock::time_point deadline = Clock::time_point::max();
  int attempts = 0;      // instances it has failed on
  bool started = false;  // run once: its queue time is measured
  std::promise<Outcome> promise;
};

struct ModelScheduler::Batch {
  std::vector<std::shared_ptr<Pending>> requests;
  int64_t rows = 0;
  double predicted_s = 0;
  // Runs by itself, taking no others: a member of a batch that failed, or a request that gives
  // an optional input (InferRequest::alone).
  bool alone = false;
};

struct ModelScheduler::Worker {
  std::unique_ptr<ModelInstance> instance;
  std::deque<Batch> batches;  // the front one runs once `running`
  bool running = false;
  Clock::time_point running_since;
  int64_t requests = 0;
  bool healthy = true;
  double busy_s = 0;
  std::condition_variable wake;
  std::thread thread;
};

ModelScheduler::ModelScheduler(const ModelConfig& config, Balancer balancer, Metrics& metrics)
    : config_(config), balancer_(balancer), metrics_(metrics) {
  const BatchingOptions& b = config.batching;
  levels_.resize(static_cast<size_t>(b.priority_levels));
  for (const std::string& id : config.devices) {
    auto worker = std::make_unique<Worker>();
    worker->instance = std::make_unique<ModelInstance>(id, config.path, b.max_batch);
    workers_.push_back(std::move(worker));
  }
  signature_ = signature_of(config.name, workers_.front()->instance->model(), b.max_batch,
                            b.priority_levels);
  const HostTensors zeros = warm_up_inputs(signature_);
  for (auto& worker : workers_) worker->healthy = warm_up(*worker->instance, signature_, zeros);
  for (auto& worker : workers_)
    worker->thread = std::thread([this, w = worker.get()] { work(*w); });
  scheduler_ = std::thread([this] { schedule(); });
}

ModelScheduler::~ModelScheduler() {
  {
    std::lock_guard lock(mutex_);
    accepting_ = false;
    stopping_ = true;
    answer_unstarted(503);
    changed_.notify_all();
  }
  scheduler_.join();
  for (auto& worker : workers_) worker->thread.join();
}

std::future<Outcome> ModelScheduler::submit(InferRequest request) {
  auto pending = std::make_shared<Pending>();
  if (request.timeout_us > 0)
    pending->deadline = deadline_after(pending->arrived, request.timeout_us);
  if (request.priority < 1 || request.priority > static_cast<int64_t>(levels_.size()))
    throw RequestError(400, "priority " + std::to_string(request.priority) +
                                " is not a level of model '" + config_.name + "' (1 to " +
                                std::to_string(levels_.size()) + ")");
  const size_t level = static_cast<size_t>(request.priority - 1);
  pending->request = std::move(request);
  std::future<Outcome> future = pending->promise.get_future();
  Pending* mine = pending.get();
  std::unique_lock lock(mutex_);
  if (!accepting_) throw RequestError(503, "the server is shutting down");
  if (std::none_of(workers_.begin(), workers_.end(), [](const auto& w) { return w->healthy; }))
    throw RequestError(503, "model '" + config_.name + "' has no healthy instance");
  if (queued_ >= config_.batching.max_queue)
    throw RequestError(503, "model '" + config_.name + "': the queue is full (" +
                                std::to_string(config_.batching.max_queue) +
                                " requests); retry later");
  levels_[level].push_back(std::move(pending));
  ++queued_;
  ++outstanding_;
  // A batch that can go now goes from this thread, and where it holds this request and its
  // instance is idle, this thread runs it: no hand-off to the scheduler's or the worker's thread
  // and back. The scheduler's thread wakes only for what must wait (a delay, an instance's room).
  std::vector<Worker*> woken;
  if (dispatch_ready(&woken) != Clock::time_point::max() || queued_ > 0) changed_.notify_all();
  Worker* inline_worker = nullptr;
  for (Worker* worker : woken) {
    const bool holds_mine =
        !worker->running && !worker->batches.empty() &&
        std::any_of(worker->batches.front().requests.begin(),
                    worker->batches.front().requests.end(),
                    [&](const std::shared_ptr<Pending>& p) { return p.get() == mine; });
    if (holds_mine && !inline_worker)
      inline_worker = worker;
    else
      worker->wake.notify_all();
  }
  if (inline_worker) run_front(*inline_worker, lock);
  return future;
}

bool ModelScheduler::ready() const {
  std::lock_guard lock(mutex_);
  return accepting_ &&
         std::any_of(workers_.begin(), workers_.end(), [](const auto& w) { return w->healthy; });
}

int64_t ModelScheduler::queue_depth() const {
  std::lock_guard lock(mutex_);
  return queued_;
}

int64_t ModelScheduler::outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

std::vector<InstanceStatus> ModelScheduler::instances() const {
  std::lock_guard lock(mutex_);
  std::vector<InstanceStatus> out;
  const auto now = Clock::now();
  const double uptime = std::max(1e-9, seconds_between(started_, now));
  for (const auto& worker : workers_) {
    const Device& device = worker->instance->device();
    double busy = worker->busy_s;
    if (worker->running) busy += seconds_between(worker->running_since, now);
    double memory = 0;
    try {
      memory = static_cast<double>(device.allocator().stats().allocated_bytes.current);
    } catch (const Error&) {
      memory = 0;  // a lost device has no figures
    }
    out.push_back(
        {device.id(), worker->healthy, std::min(1.0, busy / uptime), memory, worker->requests});
  }
  return out;
}

void ModelScheduler::stop_accepting() {
  std::lock_guard lock(mutex_);
  accepting_ = false;
  dispatch_ready();  // a batch waiting for company leaves now
  changed_.notify_all();
}

int64_t ModelScheduler::cut_off_unstarted() {
  std::lock_guard lock(mutex_);
  return answer_unstarted(503);
}

int64_t ModelScheduler::answer_unstarted(int status) {
  const std::string message =
      "the server stopped before model '" + config_.name + "' answered the request";
  int64_t answered = queued_;
  fail_all_queued(status, message);
  for (auto& worker : workers_) {
    // What waits behind the running batch is answered now; the running one finishes.
    while (worker->batches.size() > (worker->running ? 1u : 0u)) {
      Batch batch = std::move(worker->batches.back());
      worker->batches.pop_back();
      worker->requests -= static_cast<int64_t>(batch.requests.size());
      answered += static_cast<int64_t>(batch.requests.size());
      for (auto& pending : batch.requests) finish(pending, {status, message, {}});
    }
    worker->wake.notify_all();
  }
  return answered;
}

bool ModelScheduler::wait_idle(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  while (outstanding_ > 0 && Clock::now() < deadline)
    idle_.wait_until(lock, std::min(deadline, Clock::now() + kPoll));
  return outstanding_ == 0;
}

void ModelScheduler::finish(const std::shared_ptr<Pending>& pending, Outcome outcome) {
  pending->promise.set_value(std::move(outcome));
  if (--outstanding_ == 0) idle_.notify_all();
}

void ModelScheduler::fail_all_queued(int status, const std::string& message) {
  for (auto& level : levels_) {
    for (auto& pending : level) finish(pending, {status, message, {}});
    level.clear();
  }
  queued_ = 0;
}

void ModelScheduler::expire(Clock::time_point now) {
  auto answer_late = [&](const std::shared_ptr<Pending>& pending) {
    const InferRequest& request = pending->request;
    finish(pending, {504,
                     "model '" + config_.name + "': the request waited longer than its " +
                         std::string(request.timeout_name) + " (" +
                         std::to_string(request.timeout_us) + ") in the queue",
                     {}});
  };
  for (auto& level : levels_)
    for (auto it = level.begin(); it != level.end();) {
      if ((*it)->deadline > now) {
        ++it;
        continue;
      }
      answer_late(*it);
      it = level.erase(it);
      --queued_;
    }
  // A batch placed on an instance behind a running one is still a wait: its requests that have
  // never run keep their deadlines there too.
  for (auto& worker : workers_) {
    auto& batches = worker->batches;
    for (auto batch = batches.begin() + (worker->running ? 1 : 0); batch != batches.end();) {
      auto& requests = batch->requests;
      const size_t before = requests.size();
      for (auto it = requests.begin(); it != requests.end();) {
        if ((*it)->started || (*it)->deadline > now) {
          ++it;
          continue;
        }
        batch->rows -= (*it)->request.rows;
        --worker->requests;
        answer_late(*it);
        it = requests.erase(it);
      }
      if (requests.empty()) {
        batch = batches.erase(batch);
        continue;
      }
      if (requests.size() != before)
        batch->predicted_s = worker->instance->predicted_seconds(batch->rows);
      ++batch;
    }
  }
}

void ModelScheduler::requeue(std::vector<std::shared_ptr<Pending>> pendings,
                             const std::string& reason) {
  // Back to the front of their levels, oldest first; one that has failed on as many instances
  // as there are is answered.
  for (auto it = pendings.rbegin(); it != pendings.rend(); ++it) {
    auto& pending = *it;
    if (pending->attempts >= static_cast<int>(workers_.size())) {
      finish(pending,
             {503,
              "model '" + config_.name + "': the request failed on every instance: " + reason,
              {}});
      continue;
    }
    levels_[static_cast<size_t>(pending->request.priority - 1)].push_front(pending);
    ++queued_;
  }
}

double ModelScheduler::work_ahead_s(const Worker& worker, Clock::time_point now) const {
  double ahead = 0;
  for (size_t i = 0; i < worker.batches.size(); ++i) {
    double left = worker.batches[i].predicted_s;
    if (i == 0 && worker.running)
      left = std::max(0.0, left - seconds_between(worker.running_since, now));
    ahead += left;
  }
  return ahead;
}

std::vector<InstanceLoad> ModelScheduler::loads(int64_t rows) const {
  std::vector<InstanceLoad> out;
  const auto now = Clock::now();
  for (const auto& worker : workers_) {
    InstanceLoad load;
    load.healthy = worker->healthy;
    load.batches = static_cast<int64_t>(worker->batches.size());
    load.requests = worker->requests;
    load.max_batches = config_.batching.max_batches_per_instance;
    load.work_ahead_s = work_ahead_s(*worker, now);
    load.batch_s = worker->instance->predicted_seconds(rows);
    out.push_back(load);
  }
  return out;
}

void ModelScheduler::schedule() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const Clock::time_point wake = dispatch_ready();
    changed_.wait_until(lock, std::min(wake, Clock::now() + kPoll));
  }
}

Clock::time_point ModelScheduler::dispatch_ready(std::vector<Worker*>* woken) {
  const BatchingOptions& options = config_.batching;
  const int64_t max_rows = signature_.batchable ? options.max_batch : 1;
  const auto delay = std::chrono::microseconds(options.max_queue_delay_us);
  while (true) {
    const auto now = Clock::now();
    expire(now);
    top_up_waiting_batches(max_rows);
    if (queued_ == 0) return Clock::time_point::max();
    // The head: the oldest request of the first level that has one; then every request with
    // its shapes, level by level, while the rows fit.
    std::shared_ptr<Pending> head;
    for (auto& level : levels_)
      if (!level.empty()) {
        head = level.front();
        break;
      }
    std::vector<std::shared_ptr<Pending>> candidates;
    std::vector<int64_t> prefix_rows;
    int64_t rows = 0;
    bool full = false;
    const bool singly = batch_singly_ || head->request.alone;
    for (auto& level : levels_)
      for (auto& pending : level) {
        if (pending->request.shape_key != head->request.shape_key) continue;
        if (pending->request.alone && pending != head) continue;  // it heads a batch of its own
        if (rows + pending->request.rows > max_rows || (singly && !candidates.empty())) {
          full = true;
          continue;
        }
        rows += pending->request.rows;
        candidates.push_back(pending);
        prefix_rows.push_back(rows);
      }
    full = full || rows >= max_rows || singly;  // singly: no company to wait for
    // The largest preferred size some prefix of the candidates makes exactly.
    size_t take = candidates.size();
    bool preferred = false;
    if (!full)
      for (size_t i = candidates.size(); i-- > 0 && !preferred;)
        if (std::find(options.preferred_batch_sizes.begin(), options.preferred_batch_sizes.end(),
                      prefix_rows[i]) != options.preferred_batch_sizes.end()) {
          take = i + 1;
          preferred = true;
        }
    if (!full && !preferred && accepting_ && now - head->arrived < delay)
      return head->arrived + delay;
    candidates.resize(take);
    const int64_t batch_rows = take == 0 ? 0 : prefix_rows[take - 1];
    const std::vector<InstanceLoad> instance_loads = loads(batch_rows);
    const Choice choice = choose_instance(balancer_, instance_loads, next_);
    if (choice.kind == Choice::none_healthy) {
      fail_all_queued(503, "model '" + config_.name + "' has no healthy instance");
      continue;
    }
    // A batch that ends calls this again; until then the batch gathers what comes.
    if (choice.kind == Choice::wait) return Clock::time_point::max();
    for (const auto& pending : candidates) {
      auto& level = levels_[static_cast<size_t>(pending->request.priority - 1)];
      level.erase(std::find(level.begin(), level.end(), pending));
      --queued_;
    }
    Worker& worker = *workers_[choice.instance];
    worker.requests += static_cast<int64_t>(candidates.size());
    worker.batches.push_back({std::move(candidates), batch_rows,
                              instance_loads[choice.instance].batch_s, head->request.alone});
    if (woken)
      woken->push_back(&worker);
    else
      worker.wake.notify_all();
  }
}

// A batch that waits behind a running one takes compatible requests (same shapes, rows that
// fit) until it starts, as long as every healthy instance is busy: a request then waits for
// some batch to end anyway, and in one already placed it waits least and costs only its rows.
// Without this, a batch sealed when its head's delay ran out leaves for its instance half
// empty under load, and the requests behind it form the next half-empty one. Where an
// instance is idle, a request starts a batch there instead; and configured preferred batch
// sizes are kept as formed.
void ModelScheduler::top_up_waiting_batches(int64_t max_rows) {
  if (queued_ == 0 || !config_.batching.preferred_batch_sizes.empty() || batch_singly_) return;
  std::vector<std::pair<double, Worker*>> waiting;  // by predicted work ahead, soonest first
  const auto now = Clock::now();
  for (const auto& worker : workers_) {
    if (!worker->healthy) continue;
    if (worker->batches.empty()) return;  // an idle instance: new batches go there
    const bool only_running = worker->batches.size() == 1 && worker->running;
    if (!only_running && worker->batches.back().rows < max_rows)
      waiting.emplace_back(work_ahead_s(*worker, now), worker.get());
  }
  std::sort(waiting.begin(), waiting.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& entry : waiting) {
    Worker* worker = entry.second;
    Batch& batch = worker->batches.back();
    if (batch.alone) continue;
    const std::string& shapes = batch.requests.front()->request.shape_key;
    const int64_t rows_before = batch.rows;
    for (auto& level : levels_)
      for (auto it = level.begin(); it != level.end() && batch.rows < max_rows;) {
        const InferRequest& request = (*it)->request;
        if (request.shape_key != shapes || request.alone || batch.rows + request.rows > max_rows) {
          ++it;
          continue;
        }
        batch.rows += request.rows;
        batch.requests.push_back(std::move(*it));
        it = level.erase(it);
        --queued_;
        ++worker->requests;
      }
    if (batch.rows != rows_before)
      batch.predicted_s = worker->instance->predicted_seconds(batch.rows);
    if (queued_ == 0) return;
  }
}

void ModelScheduler::work(Worker& worker) {
  std::unique_lock lock(mutex_);
  while (true) {
    if (worker.batches.empty() || worker.running) {  // running: a submitting thread runs it
      if (stopping_ && worker.batches.empty()) return;
      worker.wake.wait_for(lock, kPoll);
      continue;
    }
    run_front(worker, lock);
  }
}

void ModelScheduler::run_front(Worker& worker, std::unique_lock<std::mutex>& lock) {
  worker.running = true;
  worker.running_since = Clock::now();
  const Batch& batch = worker.batches.front();
  std::vector<const HostTensors*> parts;
  std::vector<int64_t> rows;
  for (const auto& pending : batch.requests) {
    parts.push_back(&pending->request.inputs);
    rows.push_back(pending->request.rows);
    // A request waits in the queue once: running again (alone, or on another instance after a
    // device failed) is not a second wait.
    if (!pending->started)
      metrics_.observe_queue(config_.name, seconds_between(pending->arrived, worker.running_since));
    pending->started = true;
  }
  lock.unlock();
  std::vector<HostTensors> results;
  std::optional<Error> failure;
  std::optional<std::string> unsplittable;
  try {
    results = worker.instance->run(signature_, parts, rows);
  } catch (const UnsplittableBatch& error) {
    unsplittable = error.what();
  } catch (...) {
    failure = batch_failure(std::current_exception(), parts.size());
  }
  const auto ended = Clock::now();
  lock.lock();
  Batch done = std::move(worker.batches.front());
  worker.batches.pop_front();
  worker.running = false;
  worker.requests -= static_cast<int64_t>(done.requests.size());
  const double seconds = seconds_between(worker.running_since, ended);
  worker.busy_s += seconds;
  const std::string& device = worker.instance->device().id();
  if (unsplittable) {
    // The model computes across its batch dimension (it ran; the device is fine): its requests
    // run one at a time from now on, these first.
    if (!batch_singly_)
      log(LogLevel::warn,
          "hal serve: " + *unsplittable + "; its requests run one at a time from now on");
    batch_singly_ = true;
    run_each_alone(worker, std::move(done));
  } else if (!failure) {
    worker.instance->record(done.rows, seconds);
    metrics_.observe_batch(config_.name, done.rows);
    metrics_.count_instance_batch(config_.name, device, done.rows);
    for (size_t i = 0; i < done.requests.size(); ++i)
      finish(done.requests[i], {200, "", std::move(results[i])});
  } else if (request_fault(*failure) && done.requests.size() > 1) {
    // One request's data (an index out of range, a size past the device's memory) fails the
    // whole batch: each member runs again by itself, so that the fault is answered to the
    // request that has it and the others are served.
    run_each_alone(worker, std::move(done));
  } else if (request_fault(*failure)) {
    for (auto& pending : done.requests)
      finish(pending, {400, "model '" + config_.name + "': " + failure->what(), {}});
  } else {
    fail_instance(worker, std::move(done), *failure);
  }
  // The room this batch leaves is filled from this thread; the scheduler's thread keeps the
  // timed waits, the worker's thread what waits behind.
  dispatch_ready();
  if (queued_ > 0) changed_.notify_all();
  if (!worker.batches.empty()) worker.wake.notify_all();
}

void ModelScheduler::run_each_alone(Worker& worker, Batch batch) {
  // First in this instance's queue, in their order; a batch of one takes no others.
  for (auto it = batch.requests.rbegin(); it != batch.requests.rend(); ++it) {
    const int64_t own_rows = (*it)->request.rows;
    worker.batches.push_front({{std::move(*it)},
                               own_rows,
                               worker.instance->predicted_seconds(own_rows),
                               /*alone=*/true});
    ++worker.requests;
  }
}

// The device failed: out of rotation (logged at error, visible by default), its batches, the
// failed one and those waiting, back to the queue for the others. Only the failed batch's
// requests have failed here; those waiting behind it never ran.
void ModelScheduler::fail_instance(Worker& worker, Batch failed, const Error& error) {
  worker.healthy = false;
  log(LogLevel::error, "hal serve: model '" + config_.name + "' on " +
                           worker.instance->device().id() + " is out of rotation: " + error.what());
  std::vector<std::shared_ptr<Pending>> again = std::move(failed.requests);
  for (auto& pending : again) ++pending->attempts;
  for (Batch& waiting : worker.batches)
    for (auto& pending : waiting.requests) again.push_back(std::move(pending));
  worker.requests = 0;
  worker.batches.clear();
  requeue(std::move(again), error.what());
}

}  // namespace hal::serve
