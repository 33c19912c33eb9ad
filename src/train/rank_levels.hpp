// The ranks of data-parallel training as nested communicators, innermost first: the devices of
// one process (the local engine), then the processes at each local index (MPI), as the
// dimensions of a DeviceMesh give them. A rank's global index is its rank at each level weighted
// by the sizes of the levels inside it (process-major), and a collective over all ranks is the
// collective at each level in turn.
#pragma once

#include <vector>

#include "hal/dist.hpp"

namespace hal::train::detail {

class RankLevels {
 public:
  RankLevels() = default;
  // InvalidArgument for no level, an empty communicator, or a level that drives a device other
  // than the stream's.
  RankLevels(std::vector<dist::Communicator> levels, const Device& device);

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::vector<dist::Communicator>& levels() const { return levels_; }

  // `tensor` summed over every rank in place, each level's sum after the one inside it, ordered
  // on `stream`; the Works to wait for.
  std::vector<dist::Work> all_reduce_sum(const Tensor& tensor, Stream& stream) const;
  // Global rank 0's `tensor` everywhere (waits).
  void broadcast(const Tensor& tensor, Stream& stream) const;
  // Every rank's `mine` (the same count on each), in global rank order (waits).
  std::vector<float> all_gather(const std::vector<float>& mine, Stream& stream) const;

 private:
  std::vector<dist::Communicator> levels_;
  int rank_ = 0, size_ = 1;
};

}  // namespace hal::train::detail
