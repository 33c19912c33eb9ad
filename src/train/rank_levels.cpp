#include "train/rank_levels.hpp"

#include "hal/error.hpp"

namespace hal::train::detail {

RankLevels::RankLevels(std::vector<dist::Communicator> levels, const Device& device)
    : levels_(std::move(levels)) {
  if (levels_.empty())
    throw Error(ErrorCode::InvalidArgument, "DataParallel: no communicator given");
  int inner = 1;
  rank_ = 0;
  for (const dist::Communicator& comm : levels_) {
    if (!comm) throw Error(ErrorCode::InvalidArgument, "DataParallel: a communicator is empty");
    if (comm.device() && !(comm.device() == device))
      throw Error(ErrorCode::InvalidArgument,
                  "DataParallel: rank " + std::to_string(comm.rank()) + " of '" + comm.name() +
                      "' drives " + comm.device().id() + ", the stream is on " + device.id());
    rank_ += comm.rank() * inner;
    inner *= comm.size();
  }
  size_ = inner;
}

std::vector<dist::Work> RankLevels::all_reduce_sum(const Tensor& tensor, Stream& stream) const {
  std::vector<dist::Work> works;
  for (const dist::Communicator& comm : levels_)
    works.push_back(comm.all_reduce(tensor, dist::ReduceOp::sum, stream));
  return works;
}

void RankLevels::broadcast(const Tensor& tensor, Stream& stream) const {
  // Inside out: each process's local rank 0 first, then each local index from process 0.
  for (const dist::Communicator& comm : levels_) comm.broadcast(tensor, 0, stream).wait();
}

std::vector<float> RankLevels::all_gather(const std::vector<float>& mine, Stream& stream) const {
  std::vector<float> gathered = mine;
  for (const dist::Communicator& comm : levels_) {
    const auto n = static_cast<int64_t>(gathered.size());
    const Tensor input = from_vector(gathered, {n}, stream);
    const Tensor output = empty({n * comm.size()}, DType::f32, stream.device());
    comm.all_gather(input, output, stream).wait();
    gathered = output.to_vector<float>(stream);
  }
  return gathered;
}

}  // namespace hal::train::detail
