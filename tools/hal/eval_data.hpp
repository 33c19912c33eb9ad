// hal eval's data: a directory of .npy files read as one data set (the files in name order,
// joined along their first axis), its split into contiguous shards, and the scoring of gathered
// outputs against a reference (labels or outputs).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hal/stream.hpp"
#include "hal/tensor.hpp"

namespace hal::tool {

// Rows [begin, end) of a data set.
struct ShardRange {
  int64_t begin = 0, end = 0;
};

// The *.npy files of a directory, in name order, as one data set joined along axis 0, known
// from their headers alone.
struct NpyDirectory {
  struct File {
    std::filesystem::path path;
    int64_t first_row = 0, rows = 0;
  };
  std::vector<File> files;
  int64_t rows = 0;
};
// InvalidArgument naming `option` and the directory when it has no .npy file, or the file whose
// dtype or trailing dimensions differ from the first's, or that holds a scalar.
NpyDirectory scan_npy_directory(const std::string& directory, const char* option);
// Rows `range` of the data set on `stream`'s device (the host's), reading only the files, and
// of row-major files only the bytes, that hold them.
Tensor read_rows(const NpyDirectory& data, ShardRange range, Stream& stream);
// Every row.
Tensor read_npy_directory(const std::string& directory, const char* option, Stream& stream);

// Rows [begin, end) of each of `parts` contiguous shards of `rows`: the first rows % parts
// shards one row longer.
std::vector<ShardRange> shard_rows(int64_t rows, size_t parts);

// `output` scored against `reference`, both on `stream`'s device (the host's). Argmax is NumPy's
// (a NaN is the largest value, the first one winning: row_argmax in agreement.hpp).
// - integer labels with the output's shape less its last axis: "labels", accuracy = the
//   fraction of positions whose argmax over the last axis is the label;
// - otherwise the output's own shape: "outputs", the largest and mean |difference| (NaN against
//   NaN none, NaN or infinity on one side alone infinite: null, with nonfinite_elements counting
//   those), the fraction of positions whose argmax agrees, and agree = no infinite difference
//   and largest <= 1e-3 max(1, largest finite |reference|).
// InvalidArgument naming both shapes when the reference fits neither.
nlohmann::ordered_json score_against(const Tensor& output, const Tensor& reference, Stream& stream);

}  // namespace hal::tool
