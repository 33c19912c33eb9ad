// Data-parallel training (link hal::train): every rank holds a replica of the model and takes a
// share of each global batch; the replicas' gradients are all-reduced through a
// hal::dist::Communicator (MPI ranks, local devices, NCCL) while backward still runs, so every
// replica takes the same optimizer step.
//
// Heterogeneous devices: shares follow each rank's measured throughput, so a fast and a slow
// device finish their parts of a step together. The first step calibrates (each rank times a
// forward and backward on a few samples), and every step after re-balances from the ranks'
// measured times (an exponential moving average of samples per second of each rank's own work:
// forward, backward and the optimizer's step, not its wait for the others). Shares in
// proportion to those rates converge to equal times, a rank's fixed costs included. The gradient is
// the global batch's mean whatever the split: each rank's gradient (the mean over its samples) is
// weighted by its share before the sum, so training equals single-device training on the same
// batches within float rounding. docs/training.md has the design.
#pragma once

#include <memory>
#include <vector>

#include "hal/dist.hpp"
#include "hal/train.hpp"

namespace hal::train {

// Samples per rank of a batch of `batch` samples split in proportion to `weights` (largest
// remainders; every rank at least 1). InvalidArgument for a batch smaller than the ranks, or a
// weight that is not finite and > 0.
std::vector<int64_t> split_batch(int64_t batch, const std::vector<double>& weights);

struct DataParallelOptions {
  TrainerOptions trainer = {};
  int64_t bucket_bytes = int64_t{1} << 20;  // PyTorch's DDP uses 25 MiB; hal's models are small
  bool balance = true;                      // false: the even split (the baseline)
  double smoothing = 0.25;  // weight of the newest step's throughput in the running estimate
  int64_t calibration_samples = 16;  // per rank, for the first step's shares
};

// One rank's part. Every rank of `comm` constructs one (the parameters are broadcast from rank
// 0, so replicas start equal) and calls step() with the same global batch, as for a collective.
// The replica and optimizer live on the stream's device (comm's device for the local and NCCL
// engines).
class DataParallel {
 public:
  DataParallel(nn::Module& replica, optim::Optimizer& optimizer, LossFn loss, Stream& stream,
               dist::Communicator comm, DataParallelOptions options = {});
  // Ranks as nested communicators, innermost first (this process's devices, then the processes
  // at this local index: a DeviceMesh's local and cross-process dimensions): each gradient
  // bucket is summed at each level in turn, and the global rank is process-major.
  DataParallel(nn::Module& replica, optim::Optimizer& optimizer, LossFn loss, Stream& stream,
               std::vector<dist::Communicator> levels, DataParallelOptions options = {});
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // One optimizer step on the global batch x [N, ...], y [N, ...] (any device, their contents
  // complete: this rank copies its rows to its own device on its stream): the global batch's
  // mean loss, the same on every rank. Waits for the step.
  double step(const Tensor& x, const Tensor& y);

  int rank() const;
  int size() const;
  // Each rank's samples in the last step (empty before the first).
  const std::vector<int64_t>& counts() const;
  // Each rank's estimated throughput (samples per second of its forward and backward).
  const std::vector<double>& samples_per_s() const;
  // This rank's own seconds in the last step: forward, backward and the optimizer's step, its
  // wait for the others excluded; and the buckets it launched before backward ended.
  double compute_seconds() const;
  size_t buckets_launched_early() const;
  Trainer& trainer();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Replicas on this process's devices, one rank each of a local communicator, each driven by its
// own thread: a model factory makes each replica on its device's stream (the same seed on every
// device; rank 0's parameters are broadcast anyway) and an optimizer factory its optimizer.
class LocalDataParallel {
 public:
  using ModelFactory = std::function<std::shared_ptr<nn::Module>(Stream& stream)>;
  using OptimizerFactory =
      std::function<std::unique_ptr<optim::Optimizer>(std::vector<nn::NamedTensor> parameters)>;

  LocalDataParallel(const std::vector<Device>& devices, const ModelFactory& make_model,
                    const OptimizerFactory& make_optimizer, LossFn loss,
                    DataParallelOptions options = {});
  // This process's devices of a mesh over processes x local devices (DeviceMesh::create, a
  // collective over the processes): every rank of the mesh is a replica, its gradients summed
  // over the mesh's dimensions within the process first, then across processes. Every process
  // calls step() with the same global batch.
  LocalDataParallel(const dist::DeviceMesh& mesh, const ModelFactory& make_model,
                    const OptimizerFactory& make_optimizer, LossFn loss,
                    DataParallelOptions options = {});
  ~LocalDataParallel();
  LocalDataParallel(const LocalDataParallel&) = delete;
  LocalDataParallel& operator=(const LocalDataParallel&) = delete;

  // One step of every replica on the global batch; the batch's mean loss. The first error of
  // any rank is thrown.
  double step(const Tensor& x, const Tensor& y);
  size_t size() const;
  nn::Module& replica(size_t rank);
  optim::Optimizer& optimizer(size_t rank);
  Stream& stream(size_t rank);
  DataParallel& rank(size_t rank);

 private:
  void start(const std::vector<Device>& devices,
             const std::vector<std::vector<dist::Communicator>>& levels,
             const ModelFactory& make_model, const OptimizerFactory& make_optimizer,
             const LossFn& loss, const DataParallelOptions& options);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hal::train
