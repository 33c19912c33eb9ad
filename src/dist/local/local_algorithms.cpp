#include "dist/local/local_algorithms.hpp"

#include <functional>

namespace hal::dist::detail {
namespace {

using Lanes = std::vector<Lane>;

int64_t wrap(int64_t value, int64_t p) { return ((value % p) + p) % p; }

// Chunk c of a lane's input or output: nearly equal chunks of the tensor's elements.
Tensor chunk(const Tensor& flat, int64_t parts, int64_t c) {
  const int64_t n = flat.numel();
  return elements(flat, chunk_begin(n, parts, c), chunk_begin(n, parts, c + 1));
}

void mark_all(Lanes& lanes) {
  for (Lane& lane : lanes) mark(lane);
}

// Around the ring, p - 1 steps: at step s lane i sends its partial chunk (i - s - 1) to lane
// i + 1, which adds its own. Lane i ends with the reduction of chunk i of every input.
std::vector<Tensor> ring_reduce_scatter(Lanes& lanes, ReduceOp op) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  std::vector<Tensor> current(lanes.size());
  for (int64_t i = 0; i < p; ++i) current[i] = chunk(lanes[i].input, p, i);
  for (int64_t s = 0; s + 1 < p; ++s) {
    std::vector<Tensor> next(lanes.size());
    for (int64_t i = 0; i < p; ++i) {
      const int64_t j = (i + 1) % p;
      const Tensor sent = s == 0 ? chunk(lanes[i].input, p, wrap(i - 1, p)) : current[i];
      Lane& to = lanes[j];
      follow(to, lanes[i]);
      Tensor received = empty(sent.shape(), sent.dtype(), to.device);
      copy_into(to, received, sent);
      next[j] = reduce_pair(to, chunk(to.input, p, wrap(j - s - 2, p)), received, op);
    }
    current = std::move(next);
    mark_all(lanes);  // after the step on every lane: the next step waits for these
  }
  return current;
}

// p - 1 steps pass the chunks around: at step s lane i sends chunk i - s to lane i + 1. Lane
// i's own chunk i comes from own[i] (marked), else from its output, which then holds it
// (marked); every other chunk a lane sends it received at the step before.
void ring_all_gather(Lanes& lanes, const std::vector<Tensor>* own = nullptr) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  for (int64_t s = 0; s + 1 < p; ++s) {
    for (int64_t i = 0; i < p; ++i) {
      const int64_t j = (i + 1) % p, c = wrap(i - s, p);
      follow(lanes[j], lanes[i]);
      const Tensor sent = s == 0 && own ? (*own)[i] : chunk(lanes[i].output, p, c);
      copy_into(lanes[j], chunk(lanes[j].output, p, c), sent);
    }
    mark_all(lanes);
  }
}

// Lane i's reduced chunk (divided for avg) goes into chunk i of its output on the lane's side
// stream, beside the all-gather, which sends it from `reduced` and never reads chunk i of lane
// i's output: the ring then takes its 2(p-1) steps, not those and a copy within every device.
// The all-gather writes the other chunks of lane i's output, which in place are its input:
// lane i first waits until lane i + 1 has read what it reads there (its reduce-scatter).
// Returns the side streams' events, for the lanes to wait on at the end.
std::vector<Event> write_own_chunks_beside(Lanes& lanes, std::vector<Tensor>& reduced,
                                           ReduceOp op) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  for (int64_t i = 0; i < p; ++i)
    if (op == ReduceOp::avg && p > 1)
      reduced[i] = divide(lanes[i], reduced[i], static_cast<int>(p));
  std::vector<Event> written;
  for (int64_t i = 0; i < p; ++i) {
    Lane& lane = lanes[i];
    lane.side.wait(mark(lane));  // the reduction, and the lane's own reads of its input
    copy_into(lane.side, chunk(lane.output, p, i), reduced[i]);
    written.push_back(lane.side.record());
  }
  for (int64_t i = 0; i < p; ++i) follow(lanes[i], lanes[(i + 1) % p]);
  mark_all(lanes);
  return written;
}

// Binomial tree: at distance k = 1, 2, 4 ... the lane at relative rank v + k sends its partial
// result to v, which reduces. Returns the reduction at `root`.
Tensor tree_reduce(Lanes& lanes, ReduceOp op, int64_t root) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  auto real = [&](int64_t v) { return (v + root) % p; };
  std::vector<Tensor> partial(lanes.size());
  for (int64_t i = 0; i < p; ++i) partial[i] = lanes[i].input;
  for (int64_t k = 1; k < p; k <<= 1) {
    for (int64_t v = 0; v + k < p; v += 2 * k) {
      Lane& to = lanes[real(v)];
      const Tensor& sent = partial[real(v + k)];
      follow(to, lanes[real(v + k)]);
      Tensor received = empty(sent.shape(), sent.dtype(), to.device);
      copy_into(to, received, sent);
      partial[real(v)] = reduce_pair(to, partial[real(v)], received, op);
    }
    mark_all(lanes);
  }
  return partial[root];
}

// Binomial tree from `root`, whose output receives `source` first.
void tree_broadcast(Lanes& lanes, int64_t root, const Tensor& source) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  auto real = [&](int64_t v) { return (v + root) % p; };
  copy_into(lanes[root], lanes[root].output, source);
  mark(lanes[root]);
  int64_t top = 1;
  while (top < p) top <<= 1;
  for (int64_t k = top / 2; k >= 1; k /= 2) {
    for (int64_t v = 0; v + k < p; v += 2 * k) {
      Lane& to = lanes[real(v + k)];
      const Lane& from = lanes[real(v)];
      follow(to, from);
      copy_into(to, to.output, from.output);
    }
    mark_all(lanes);
  }
}

Tensor averaged(Lane& lane, const Tensor& total, ReduceOp op, int64_t p) {
  return op == ReduceOp::avg && p > 1 ? divide(lane, total, static_cast<int>(p)) : total;
}

void all_reduce(Lanes& lanes, ReduceOp op, AllReduceAlgorithm algorithm) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  if (algorithm == AllReduceAlgorithm::tree) {
    const Tensor total = averaged(lanes[0], tree_reduce(lanes, op, 0), op, p);
    tree_broadcast(lanes, 0, total);
    return;
  }
  std::vector<Tensor> reduced = ring_reduce_scatter(lanes, op);
  const std::vector<Event> written = write_own_chunks_beside(lanes, reduced, op);
  ring_all_gather(lanes, &reduced);
  for (int64_t i = 0; i < p; ++i) lanes[i].stream.wait(written[i]);
}

void all_gather(Lanes& lanes) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  for (int64_t i = 0; i < p; ++i) copy_into(lanes[i], chunk(lanes[i].output, p, i), lanes[i].input);
  mark_all(lanes);
  ring_all_gather(lanes);
}

void reduce_scatter(Lanes& lanes, ReduceOp op) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  std::vector<Tensor> reduced = ring_reduce_scatter(lanes, op);
  for (int64_t i = 0; i < p; ++i)
    copy_into(lanes[i], lanes[i].output, averaged(lanes[i], reduced[i], op, p));
}

void all_to_all(Lanes& lanes) {
  const int64_t p = static_cast<int64_t>(lanes.size());
  for (int64_t j = 0; j < p; ++j)
    for (int64_t i = 0; i < p; ++i) {
      follow(lanes[j], lanes[i]);  // lane i's ready: its input is there
      copy_into(lanes[j], chunk(lanes[j].output, p, i), chunk(lanes[i].input, p, j));
    }
}

}  // namespace

void run_local(Collective kind, ReduceOp op, int root, std::vector<Lane>& lanes,
               AllReduceAlgorithm all_reduce_algorithm) {
  for (Lane& lane : lanes) lane.stream.wait(lane.ready);
  switch (kind) {
    case Collective::all_reduce:
      return all_reduce(lanes, op, all_reduce_algorithm);
    case Collective::broadcast:
      return tree_broadcast(lanes, root, lanes[static_cast<size_t>(root)].output);
    case Collective::reduce: {
      Lane& at = lanes[static_cast<size_t>(root)];
      const Tensor total =
          averaged(at, tree_reduce(lanes, op, root), op, static_cast<int64_t>(lanes.size()));
      return copy_into(at, at.output, total);
    }
    case Collective::all_gather:
      return all_gather(lanes);
    case Collective::reduce_scatter:
      return reduce_scatter(lanes, op);
    case Collective::all_to_all:
      return all_to_all(lanes);
    case Collective::send:
    case Collective::recv:  // lanes: the sender, then the receiver
      follow(lanes[1], lanes[0]);
      return copy_into(lanes[1], lanes[1].output, lanes[0].input);
    case Collective::barrier:
      return;  // every lane waited for its caller above
  }
}

}  // namespace hal::dist::detail
