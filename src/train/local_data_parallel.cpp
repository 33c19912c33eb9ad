// Data-parallel training over this process's devices: one replica and one thread per device,
// the ranks of a local communicator.
#include <exception>
#include <mutex>
#include <thread>

#include "hal/data_parallel.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"

namespace hal::train {
namespace {

// Runs fn(rank) for every rank at once, each on its own thread (the ranks' collectives wait
// for one another) with the caller's CPU fallback setting; the first error of any rank is
// rethrown after all have returned.
void on_every_rank(size_t ranks, const std::function<void(size_t)>& fn) {
  const bool fallback = CpuFallback::allowed();
  std::exception_ptr first;
  std::mutex mutex;
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (size_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      const CpuFallback same_as_caller(fallback);
      try {
        fn(r);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!first) first = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace

struct LocalDataParallel::Impl {
  struct Rank {
    Stream stream;
    std::shared_ptr<nn::Module> model;
    std::unique_ptr<optim::Optimizer> optimizer;
    std::unique_ptr<DataParallel> parallel;
  };
  std::vector<Rank> ranks;
};

LocalDataParallel::LocalDataParallel(const std::vector<Device>& devices,
                                     const ModelFactory& make_model,
                                     const OptimizerFactory& make_optimizer, LossFn loss,
                                     DataParallelOptions options)
    : impl_(std::make_unique<Impl>()) {
  std::vector<std::vector<dist::Communicator>> levels;
  for (const dist::Communicator& comm : dist::Communicator::local(devices))
    levels.push_back({comm});
  start(devices, levels, make_model, make_optimizer, loss, options);
}

LocalDataParallel::LocalDataParallel(const dist::DeviceMesh& mesh, const ModelFactory& make_model,
                                     const OptimizerFactory& make_optimizer, LossFn loss,
                                     DataParallelOptions options)
    : impl_(std::make_unique<Impl>()) {
  // The dimensions within this process first: their sums are the cheap ones.
  std::vector<std::string> dims;
  for (const std::string& name : mesh.names())
    if (mesh.engine(name) == dist::Engine::local) dims.push_back(name);
  for (const std::string& name : mesh.names())
    if (mesh.engine(name) != dist::Engine::local) dims.push_back(name);
  std::vector<std::vector<dist::Communicator>> levels(mesh.devices().size());
  for (size_t j = 0; j < levels.size(); ++j)
    for (const std::string& dim : dims) levels[j].push_back(mesh.sub_mesh(dim, j).communicator());
  start(mesh.devices(), levels, make_model, make_optimizer, loss, options);
}

void LocalDataParallel::start(const std::vector<Device>& devices,
                              const std::vector<std::vector<dist::Communicator>>& levels,
                              const ModelFactory& make_model,
                              const OptimizerFactory& make_optimizer, const LossFn& loss,
                              const DataParallelOptions& options) {
  impl_->ranks.resize(devices.size());
  for (size_t r = 0; r < devices.size(); ++r) {
    Impl::Rank& rank = impl_->ranks[r];
    rank.stream = devices[r].create_stream();
    rank.model = make_model(rank.stream);
    if (!rank.model)
      throw Error(ErrorCode::InvalidArgument,
                  "LocalDataParallel: the model factory gave no model for " + devices[r].id());
    rank.optimizer = make_optimizer(rank.model->parameters());
    if (!rank.optimizer)
      throw Error(
          ErrorCode::InvalidArgument,
          "LocalDataParallel: the optimizer factory gave no optimizer for " + devices[r].id());
  }
  on_every_rank(devices.size(), [&](size_t r) {
    Impl::Rank& rank = impl_->ranks[r];
    rank.parallel = std::make_unique<DataParallel>(*rank.model, *rank.optimizer, loss, rank.stream,
                                                   levels[r], options);
  });
}

LocalDataParallel::~LocalDataParallel() = default;

double LocalDataParallel::step(const Tensor& x, const Tensor& y) {
  std::vector<double> losses(impl_->ranks.size());
  on_every_rank(impl_->ranks.size(),
                [&](size_t r) { losses[r] = impl_->ranks[r].parallel->step(x, y); });
  return losses.front();
}

size_t LocalDataParallel::size() const { return impl_->ranks.size(); }
nn::Module& LocalDataParallel::replica(size_t rank) { return *impl_->ranks.at(rank).model; }
optim::Optimizer& LocalDataParallel::optimizer(size_t rank) {
  return *impl_->ranks.at(rank).optimizer;
}
Stream& LocalDataParallel::stream(size_t rank) { return impl_->ranks.at(rank).stream; }
DataParallel& LocalDataParallel::rank(size_t rank) { return *impl_->ranks.at(rank).parallel; }

}  // namespace hal::train
