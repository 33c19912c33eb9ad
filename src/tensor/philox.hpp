// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator, so element i's numbers depend only on the seed and i, never on the
// order of work. kernels/tensor/random.kernel is the same algorithm for devices; both must
// stay bit-identical (tests/tensor checks them against each other and the published vectors).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace hal::tensor {

using Philox4 = std::array<uint32_t, 4>;

constexpr Philox4 philox4x32_10(Philox4 counter, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kM0} * counter[0];
    const uint64_t p1 = uint64_t{kM1} * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<uint32_t>(p0)};
    key = {key[0] + kW0, key[1] + kW1};
  }
  return counter;
}

// The four draws of block `block` (elements 4 * block to 4 * block + 3) for `seed`.
constexpr Philox4 philox_block(uint64_t seed, uint64_t block) {
  return philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0, 0},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// [0, 1) from the top 24 bits of a draw: exact in f32.
constexpr float unit_f32(uint32_t draw) {
  return static_cast<float>(draw >> 8) * (1.0f / 16777216.0f);
}
// [0, 1) from 53 bits of two draws: exact in f64.
constexpr double unit_f64(uint32_t high, uint32_t low) {
  return static_cast<double>((uint64_t{high >> 5} << 26) | (low >> 6)) * (1.0 / 9007199254740992.0);
}

}  // namespace hal::tensor
