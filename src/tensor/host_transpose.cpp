#include "tensor/host_transpose.hpp"

#include <algorithm>
#include <cstring>

namespace hal::tensor {
namespace {

constexpr int64_t kLine = 64;  // bytes: a tile of single elements is a line of them square
// Tiles side by side in a unit, so that each source row is read a few lines in a row (the
// hardware's prefetchers stop at page edges, and a tall matrix's rows are pages apart):
// 4096 x 4096 f32 12.5 ms against 14.6 with one tile; 8 leaves 1024 x 1024 too few units.
constexpr int64_t kWide = 4;
// Runs (contiguous rows of elements moved whole) in a tile's side, and the longest run worth
// tiling: longer ones stream well enough copied one after another in the result's order.
constexpr int64_t kRunTile = 8;
constexpr int64_t kLongestTiledRun = 512;  // bytes
// Rows in a unit of work at most (a multiple of every tile's side), so that a tall matrix with
// few columns still spreads over the pool's threads.
constexpr int64_t kBandRows = 1024;

// Through memcpy: a view's storage may be a caller's buffer, aligned to nothing in particular.
template <class T>
T load(const unsigned char* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

// A whole tile, a line of elements square: the source rows read whole into a small buffer, then
// the destination rows written whole from it. Reading and writing in place instead keeps a line
// of every source row live while the columns are written, and rows a power of two apart share a
// cache set: a 4096-wide f32 transpose then missed L1 on most elements. The fixed sizes let the
// compiler inline the copies and keep the tile in registers.
template <class T>
void copy_tile(unsigned char* to, int64_t to_step, const unsigned char* from, int64_t from_step) {
  constexpr int64_t kTile = kLine / sizeof(T);
  T tile[kTile][kTile];
  for (int64_t row = 0; row < kTile; ++row) std::memcpy(tile[row], from + row * from_step, kLine);
  for (int64_t col = 0; col < kTile; ++col) {
    T line[kTile];
    for (int64_t row = 0; row < kTile; ++row) line[row] = tile[row][col];
    std::memcpy(to + col * to_step, line, kLine);
  }
}

// A tile cut short (the matrix's edge, or a result whose last dimension is shorter than a
// line, such as NHWC's 3 channels): few enough source rows to stay in cache, element by element.
template <class T>
void copy_edge(unsigned char* to, int64_t to_step, const unsigned char* from, int64_t from_step,
               int64_t rows, int64_t cols) {
  constexpr auto kSize = static_cast<int64_t>(sizeof(T));
  for (int64_t col = 0; col < cols; ++col)
    for (int64_t row = 0; row < rows; ++row) {
      const T value = load<T>(from + row * from_step + col * kSize);
      std::memcpy(to + col * to_step + row * kSize, &value, sizeof(T));
    }
}

// A tile of runs: each source row's runs lie side by side, so they are read in memory order.
void copy_runs(unsigned char* to, int64_t to_step, const unsigned char* from, int64_t from_step,
               int64_t rows, int64_t cols, int64_t run) {
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col)
      std::memcpy(to + col * to_step + row * run, from + row * from_step + col * run,
                  static_cast<size_t>(run));
}

}  // namespace

std::optional<HostTranspose> HostTranspose::plan(const Shape& shape, const Shape& strides,
                                                 size_t element_size) {
  const size_t dims = shape.size();
  if (dims < 2) return std::nullopt;
  const auto element = static_cast<int64_t>(element_size);
  HostTranspose plan;
  // The result's rows, made of runs: single elements where the view's last dimension does not
  // run along memory, else the last dimension's rows of elements.
  size_t row_dim = dims - 1;
  int64_t run_elements = 1;
  if (strides[dims - 1] == 1) {
    row_dim = dims - 2;
    run_elements = shape[dims - 1];
    plan.run_bytes_ = run_elements * element;
    if (dims < 3 || plan.run_bytes_ > kLongestTiledRun) return std::nullopt;
    plan.tile_ = kRunTile;
  } else {
    if (element_size != 1 && element_size != 2 && element_size != 4 && element_size != 8)
      return std::nullopt;
    plan.run_bytes_ = element;
    plan.tile_ = kLine / element;
  }
  // A row dimension of stride 0 (an expanded column) is one source row repeated: row copies
  // write the result in order, where tiles wrote it a row apart (2.5-6 times slower).
  if (strides[row_dim] == 0) return std::nullopt;
  // The columns: the dimension along which the view's runs lie side by side in memory.
  size_t col_dim = dims;
  for (size_t d = 0; d < row_dim; ++d)
    if (strides[d] == run_elements) col_dim = d;
  if (col_dim == dims) return std::nullopt;

  Shape out_strides(dims);  // the result is row-major
  int64_t out_stride = 1;
  for (size_t d = dims; d-- > 0;) {
    out_strides[d] = out_stride;
    out_stride *= shape[d];
  }
  plan.span_ = kWide * plan.tile_;
  plan.rows_ = shape[row_dim];
  plan.cols_ = shape[col_dim];
  plan.in_row_step_ = strides[row_dim] * element;
  plan.out_col_step_ = out_strides[col_dim] * element;
  plan.blocks_ = (plan.cols_ + plan.span_ - 1) / plan.span_;
  plan.bands_ = (plan.rows_ + kBandRows - 1) / kBandRows;
  plan.run_elements_ = run_elements;
  for (size_t d = 0; d < row_dim; ++d) {
    if (d == col_dim) continue;
    plan.outer_shape_.push_back(shape[d]);
    plan.outer_in_steps_.push_back(strides[d] * element);
    plan.outer_out_steps_.push_back(out_strides[d] * element);
    plan.outer_count_ *= shape[d];
  }
  return plan;
}

template <class T>
void HostTranspose::copy_span(unsigned char* to, const unsigned char* from, int64_t cols,
                              int64_t row_begin, int64_t row_end) const {
  constexpr int64_t kTile = kLine / sizeof(T);
  for (int64_t row = row_begin; row < row_end; row += kTile) {
    const int64_t rows = std::min(kTile, row_end - row);
    for (int64_t col = 0; col < cols; col += kTile) {
      const int64_t tile_cols = std::min(kTile, cols - col);
      unsigned char* tile_to = to + col * out_col_step_ + row * run_bytes_;
      const unsigned char* tile_from = from + row * in_row_step_ + col * run_bytes_;
      if (rows == kTile && tile_cols == kTile)
        copy_tile<T>(tile_to, out_col_step_, tile_from, in_row_step_);
      else
        copy_edge<T>(tile_to, out_col_step_, tile_from, in_row_step_, rows, tile_cols);
    }
  }
}

void HostTranspose::run(unsigned char* out, const unsigned char* in, uint64_t first,
                        uint64_t end) const {
  int64_t outer = -1, in_base = 0, out_base = 0;
  for (uint64_t unit = first; unit < end; ++unit) {
    // Units in the order outer index, span of columns, band of rows (fastest): a chunk's units
    // go on down the same columns.
    const auto index = static_cast<int64_t>(unit);
    const int64_t this_outer = index / (blocks_ * bands_);
    if (this_outer != outer) {  // the outer offsets change once every blocks_ * bands_ units
      outer = this_outer;
      in_base = out_base = 0;
      int64_t rest = outer;
      for (size_t d = outer_shape_.size(); d-- > 0;) {
        const int64_t at = rest % outer_shape_[d];
        rest /= outer_shape_[d];
        in_base += at * outer_in_steps_[d];
        out_base += at * outer_out_steps_[d];
      }
    }
    const int64_t col = index / bands_ % blocks_ * span_;
    const int64_t cols = std::min(span_, cols_ - col);
    const int64_t row_begin = index % bands_ * kBandRows;
    const int64_t row_end = std::min(rows_, row_begin + kBandRows);
    unsigned char* to = out + out_base + col * out_col_step_;
    const unsigned char* from = in + in_base + col * run_bytes_;
    switch (tile_ * run_bytes_ == kLine ? run_bytes_ : 0) {
      case 1:
        copy_span<uint8_t>(to, from, cols, row_begin, row_end);
        break;
      case 2:
        copy_span<uint16_t>(to, from, cols, row_begin, row_end);
        break;
      case 4:
        copy_span<uint32_t>(to, from, cols, row_begin, row_end);
        break;
      case 8:
        copy_span<uint64_t>(to, from, cols, row_begin, row_end);
        break;
      default:  // runs of several elements
        for (int64_t row = row_begin; row < row_end; row += tile_)
          for (int64_t tile_col = 0; tile_col < cols; tile_col += tile_)
            copy_runs(to + tile_col * out_col_step_ + row * run_bytes_, out_col_step_,
                      from + row * in_row_step_ + tile_col * run_bytes_, in_row_step_,
                      std::min(tile_, row_end - row), std::min(tile_, cols - tile_col), run_bytes_);
    }
  }
}

}  // namespace hal::tensor
