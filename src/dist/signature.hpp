// What a rank says it is calling, compared across ranks before any data moves: the cheap
// check of HAL_DIST_DEBUG=check (kind, dtype, element count, root, op) and the shapes that
// =detail adds. Plain bytes of a fixed size, so that MPI can gather them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dist/communicator_impl.hpp"
#include "dist/settings.hpp"

namespace hal::dist::detail {

struct Signature {
  static constexpr int kShownDims = 6;

  uint64_t sequence = 0;
  int64_t count = 0;         // the elements of the call's first tensor (input, else output)
  uint64_t shape_hash = 0;   // of the first tensor's full shape (compared under detail)
  uint64_t output_hash = 0;  // of the output's, where every rank passes one (else 0)
  int32_t root = 0;
  uint8_t kind = 0, dtype = 0, op = 0, dims = 0;
  uint8_t output_dims = 0;
  uint8_t has_output = 0;  // the output is compared: all_reduce, all_gather, reduce_scatter,
                           // all_to_all (reduce's is the root's alone, and may be undefined)
  uint8_t padding[6] = {};
  int64_t shape[kShownDims] = {};         // the first tensor's shape, for messages
  int64_t output_shape[kShownDims] = {};  // the output's, where compared
};
static_assert(sizeof(Signature) == 144);

Signature signature_of(const CollectiveCall& call, uint64_t sequence);

// "all_reduce(f32[1031], sum)", "broadcast(i64[3], root 1)", and the output where its shape is
// not the input's: "all_gather(f32[13] into f32[4, 13])".
std::string describe(const Signature& signature);

// Why `theirs` (rank `their_rank`) cannot meet `ours`, or nothing when they match under
// `level`. Root and op are compared where the kind has them; under detail the full shapes of
// the input and of an output every rank passes.
std::optional<std::string> mismatch(const Signature& ours, int our_rank, const Signature& theirs,
                                    int their_rank, DebugLevel level);

}  // namespace hal::dist::detail
