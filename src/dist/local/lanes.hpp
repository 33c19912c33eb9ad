// One rank of a local collective as the algorithms drive it: its device, the stream of the
// group's own it enqueues on, and its tensors; and the three things a step does on a lane:
// wait for another lane, copy from it, reduce.
#pragma once

#include <vector>

#include "hal/dist.hpp"

namespace hal::dist::detail {

struct Lane {
  Device device;
  Stream stream;         // the group's stream for this rank: collectives run here in order
  Stream side;           // a second one (all-reduce): work beside the ring's, joined at its end
  Tensor input, output;  // contiguous 1-d views (undefined where the call has none)
  Event ready;           // the caller's stream's work before the call
  Event last;            // this lane's latest step, once recorded
};

// The elements [begin, end) of a contiguous 1-d tensor.
Tensor elements(const Tensor& flat, int64_t begin, int64_t end);
// Where chunk `c` of `parts` nearly equal chunks of `count` elements begins (chunk_begin of
// c + 1 is where it ends).
int64_t chunk_begin(int64_t count, int64_t parts, int64_t c);

// Records the lane's progress and returns it (for other lanes to wait on).
const Event& mark(Lane& lane);
// `lane` waits for `other`'s latest step (its ready event before any).
void follow(Lane& lane, const Lane& other);

// Copies `src` (any device) into `dst` (a tensor of lane's device, same dtype and elements)
// on `stream` (lane's, by default): peer copies where the backend has them, staged otherwise.
void copy_into(Lane& lane, const Tensor& dst, const Tensor& src);
void copy_into(Stream& stream, const Tensor& dst, const Tensor& src);
// A new tensor on lane's device: a (op) b, both on that device. Through the device's op table
// where it has the op in the dtype, else on the host (a host callback on lane's stream).
Tensor reduce_pair(Lane& lane, const Tensor& a, const Tensor& b, ReduceOp op);
// A new tensor: t / ranks (avg), on the device or on the host as above.
Tensor divide(Lane& lane, const Tensor& t, int ranks);
// Whether two tensors are the same elements of the same storage.
bool same_memory(const Tensor& a, const Tensor& b);

}  // namespace hal::dist::detail
