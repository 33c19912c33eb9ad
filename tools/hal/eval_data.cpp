#include "eval_data.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>

#include "agreement.hpp"
#include "choice_json.hpp"
#include "hal/error.hpp"
#include "hal/npy.hpp"
#include "hal/ops.hpp"

namespace hal::tool {
namespace {

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

nlohmann::ordered_json labels_score(size_t positions, size_t right) {
  return {
      {"kind", "labels"},
      {"positions", positions},
      {"correct", right},
      {"accuracy", positions ? static_cast<double>(right) / static_cast<double>(positions) : 0.0}};
}

}  // namespace

NpyDirectory scan_npy_directory(const std::string& directory, const char* option) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error))
    throw Error(ErrorCode::InvalidArgument,
                std::string(option) + " " + directory + ": not a directory");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.is_regular_file() && entry.path().extension() == ".npy")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw Error(ErrorCode::InvalidArgument,
                std::string(option) + " " + directory + ": no .npy files in it");
  NpyDirectory data;
  NpyInfo first;
  for (const auto& file : files) {
    const NpyInfo info = read_npy_info(file);
    if (info.shape.empty())
      throw Error(ErrorCode::InvalidArgument, std::string(option) + ": " + file.string() +
                                                  " holds a scalar; examples are rows of axis 0");
    if (data.files.empty()) {
      first = info;
    } else if (info.dtype != first.dtype ||
               !std::equal(info.shape.begin() + 1, info.shape.end(), first.shape.begin() + 1,
                           first.shape.end())) {
      throw Error(ErrorCode::InvalidArgument,
                  std::string(option) + ": " + file.string() + " is " +
                      std::string(to_string(info.dtype)) + " " + shape_text(info.shape) +
                      ", which does not join " + files.front().string() + " (" +
                      std::string(to_string(first.dtype)) + " " + shape_text(first.shape) +
                      ") along axis 0");
    }
    data.files.push_back({file, data.rows, info.shape[0]});
    data.rows += info.shape[0];
  }
  return data;
}

Tensor read_rows(const NpyDirectory& data, ShardRange range, Stream& stream) {
  std::vector<Tensor> parts;
  for (const NpyDirectory::File& file : data.files) {
    const int64_t begin = std::max(range.begin, file.first_row),
                  end = std::min(range.end, file.first_row + file.rows);
    if (begin < end)
      parts.push_back(
          read_npy_rows(file.path, begin - file.first_row, end - file.first_row, stream));
  }
  if (parts.empty())  // no rows, with the data's dtype and trailing dimensions
    return read_npy_rows(data.files.front().path, 0, 0, stream);
  return parts.size() == 1 ? parts.front() : concat(parts, 0, stream);
}

Tensor read_npy_directory(const std::string& directory, const char* option, Stream& stream) {
  const NpyDirectory data = scan_npy_directory(directory, option);
  return read_rows(data, {0, data.rows}, stream);
}

std::vector<ShardRange> shard_rows(int64_t rows, size_t parts) {
  std::vector<ShardRange> shards;
  const auto n = static_cast<int64_t>(parts);
  int64_t begin = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t size = rows / n + (i < rows % n ? 1 : 0);
    shards.push_back({begin, begin + size});
    begin += size;
  }
  return shards;
}

nlohmann::ordered_json score_against(const Tensor& output, const Tensor& reference,
                                     Stream& stream) {
  const Shape& shape = output.shape();
  if (shape.empty()) throw Error(ErrorCode::InvalidArgument, "--reference: the output is a scalar");
  // A model that outputs class indices itself (an ArgMax at its end: i32 or i64; a quantized
  // model's u8 or i8 scores are not indices) is scored position by position against integer
  // labels of its shape, or of its shape less a last axis of 1 (ArgMax's keepdims).
  const bool indices = output.dtype() == DType::i32 || output.dtype() == DType::i64;
  const bool kept_axis =
      shape.back() == 1 && reference.shape() == Shape(shape.begin(), shape.end() - 1);
  if (indices && is_integer(reference.dtype()) && (reference.shape() == shape || kept_axis)) {
    const std::vector<int64_t> got = cast(output, DType::i64, stream).to_vector<int64_t>(stream);
    const std::vector<int64_t> labels =
        cast(reference, DType::i64, stream).to_vector<int64_t>(stream);
    size_t right = 0;
    for (size_t p = 0; p < got.size(); ++p) right += got[p] == labels[p] ? 1 : 0;
    return labels_score(got.size(), right);
  }
  const Shape without_last(shape.begin(), shape.end() - 1);
  const int64_t classes = shape.back();
  const std::vector<float> out = cast(output, DType::f32, stream).to_vector<float>(stream);
  // NumPy's argmax (agreement.hpp): a row with a NaN has it as its largest value.
  const auto row_of = [&](const std::vector<float>& values, size_t position) {
    return std::span<const float>(values).subspan(position * static_cast<size_t>(classes),
                                                  static_cast<size_t>(classes));
  };
  const size_t positions = classes > 0 ? out.size() / static_cast<size_t>(classes) : 0;
  if (is_integer(reference.dtype()) && reference.shape() == without_last) {
    const std::vector<int64_t> labels =
        cast(reference, DType::i64, stream).to_vector<int64_t>(stream);
    size_t right = 0;
    for (size_t p = 0; p < positions; ++p)
      right += static_cast<int64_t>(row_argmax(row_of(out, p))) == labels[p] ? 1 : 0;
    return labels_score(positions, right);
  }
  if (reference.shape() != shape)
    throw Error(ErrorCode::InvalidArgument,
                "--reference: shape " + shape_text(reference.shape()) + " (" +
                    std::string(to_string(reference.dtype())) + ") is neither the output's " +
                    shape_text(shape) + " nor integer labels of " + shape_text(without_last));
  const std::vector<float> expected = cast(reference, DType::f32, stream).to_vector<float>(stream);
  // As hal compare holds outputs (agreement.hpp): NaN against NaN agrees, NaN or infinity on one
  // side alone is an infinite difference, counted; the tolerance scales with the finite
  // reference values alone.
  const Agreement agreed = agreement(out, expected);
  size_t same = 0;
  for (size_t p = 0; p < positions; ++p)
    same += row_argmax(row_of(out, p)) == row_argmax(row_of(expected, p)) ? 1 : 0;
  return {{"kind", "outputs"},
          {"max_abs_diff", number_or_null(agreed.max_difference)},
          {"mean_abs_diff",
           number_or_null(out.empty() ? 0.0 : agreed.sum / static_cast<double>(out.size()))},
          {"nonfinite_elements", agreed.nonfinite},
          {"argmax_agreement",
           positions ? static_cast<double>(same) / static_cast<double>(positions) : 0.0},
          {"agree", agreed.agree()}};
}

}  // namespace hal::tool
