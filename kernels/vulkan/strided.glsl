// Where element i of a launch is in each operand: flat, or walked row-major over DIMS merged
// dimensions whose sizes and per-operand strides are push constants (src/ops's
// ElementwiseLayout, padded at the front with size 1 and stride 0).
uint walk(uint i, uint shape[DIMS], uint strides[DIMS]) {
  uint at = 0, rest = i;
  for (int d = DIMS - 1; d >= 0; --d) {
    at += (rest % shape[d]) * strides[d];
    rest /= shape[d];
  }
  return at;
}
