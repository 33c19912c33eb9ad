// .npy files: a magic string, a version, a header that is a Python dict literal of three keys
// ('descr', 'fortran_order', 'shape'), then the raw elements. NumPy documents the format
// (numpy.lib.format); this reads exactly that dict and refuses anything else by name.
#include "hal/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

#include "core/checked_math.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "model/utf8.hpp"

namespace hal {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

[[noreturn]] void bad(const std::filesystem::path& path, const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, path.string() + ": " + what);
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// The header's dict, token by token.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::filesystem::path& path)
      : text_(text), path_(path) {}

  Header parse() {
    Header header;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        // A structured dtype's descr is a list of fields, kept as text to name in the refusal.
        header.descr = peek('[') ? list() : quoted();
        has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        header.shape = tuple();
        has_shape = true;
      } else {
        fail("unknown key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    if (!has_descr || !has_order || !has_shape)
      fail("the header lacks one of 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool peek(char c) {
    skip_space();
    return at_ < text_.size() && text_[at_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  std::string quoted() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) fail("expected a string");
    const char quote = text_[at_++];
    const size_t end = text_.find(quote, at_);
    if (end == std::string_view::npos) fail("a string does not end");
    std::string value(text_.substr(at_, end - at_));
    at_ = end + 1;
    return value;
  }
  // A list literal, nested lists and tuples and quoted names (which may hold brackets) within,
  // as its text.
  std::string list() {
    const size_t start = at_;
    int depth = 0;
    do {
      if (at_ >= text_.size()) fail("a list does not end");
      const char c = text_[at_];
      if (c == '\'' || c == '"') {
        quoted();
        continue;
      }
      depth += c == '[' || c == '(' ? 1 : c == ']' || c == ')' ? -1 : 0;
      ++at_;
    } while (depth > 0);
    return std::string(text_.substr(start, at_ - start));
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (text_.substr(at_, std::strlen(word)) == word) {
        at_ += std::strlen(word);
        return value;
      }
    fail("fortran_order is neither True nor False");
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (!peek(')')) {
      skip_space();
      size_t digits = 0;
      int64_t value = 0;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
        if (value > (INT64_MAX - 9) / 10) fail("a dimension is too large");
        value = value * 10 + (text_[at_++] - '0');
        ++digits;
      }
      if (digits == 0) fail("a dimension is not a number");
      shape.push_back(value);
      if (!peek(')')) expect(',');
    }
    expect(')');
    return shape;
  }
  [[noreturn]] void fail(const std::string& what) {
    bad(path_, "not a NumPy .npy header (" + what + " at character " + std::to_string(at_) +
                   " of \"" + std::string(text_) + "\")");
  }

  std::string_view text_;
  const std::filesystem::path& path_;
  size_t at_ = 0;
};

// NumPy's type code of each dtype, without the byte order.
const std::map<std::string, DType, std::less<>>& type_codes() {
  static const std::map<std::string, DType, std::less<>> codes{
      {"f4", DType::f32}, {"f8", DType::f64}, {"f2", DType::f16}, {"i1", DType::i8},
      {"u1", DType::u8},  {"i2", DType::i16}, {"u2", DType::u16}, {"i4", DType::i32},
      {"u4", DType::u32}, {"i8", DType::i64}, {"u8", DType::u64}, {"b1", DType::boolean}};
  return codes;
}

// NumPy's fixed-width strings: 'U<n>' (n UTF-32 code points) or 'S<n>' (n bytes).
struct StringType {
  bool unicode = true;
  bool big_endian = false;
  size_t width = 0;  // code points or bytes per element
  size_t item_size() const { return unicode ? 4 * width : width; }
};

std::optional<StringType> string_type(const std::string& descr) {
  if (descr.size() < 3 || (descr[1] != 'U' && descr[1] != 'S')) return std::nullopt;
  if (descr[0] != '<' && descr[0] != '|' && descr[0] != '=' && descr[0] != '>') return std::nullopt;
  StringType type{descr[1] == 'U', descr[0] == '>', 0};
  for (size_t i = 2; i < descr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(descr[i])) || type.width > 1'000'000)
      return std::nullopt;
    type.width = type.width * 10 + static_cast<size_t>(descr[i] - '0');
  }
  return type;
}

DType dtype_of_descr(const std::string& descr, const std::filesystem::path& path) {
  if (descr.starts_with('['))
    throw Error(ErrorCode::Unsupported, path.string() + ": NumPy dtype " + descr +
                                            " is structured (named fields); hal reads arrays of "
                                            "one number type");
  if (descr.size() < 2) bad(path, "descr '" + descr + "' is not a NumPy type");
  const char order = descr[0];
  const auto code = type_codes().find(descr.substr(1));
  if (string_type(descr))
    throw Error(ErrorCode::Unsupported, path.string() + ": NumPy dtype '" + descr +
                                            "' holds strings, not numbers (read_npy_strings "
                                            "reads them)");
  if (code == type_codes().end() || (order != '<' && order != '|' && order != '=' && order != '>'))
    throw Error(ErrorCode::Unsupported,
                path.string() + ": NumPy dtype '" + descr +
                    "' (hal reads f4, f8, f2, i1, u1, i2, u2, i4, u4, i8, u8 and b1)");
  if (order == '>' && size_of(code->second) > 1)
    throw Error(ErrorCode::Unsupported, path.string() + ": big-endian data ('" + descr + "')");
  return code->second;
}

uint32_t little_endian(const unsigned char* bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = count; i-- > 0;) value = value << 8 | bytes[i];
  return value;
}

// A .npy file's header, read from the start of `file` (left where the elements start).
struct Prefix {
  Header header;
  size_t data_start = 0;  // in bytes from the start of the file
  size_t data_size = 0;   // the bytes after the header: the elements'
};

Prefix read_prefix(std::istream& file, const std::filesystem::path& path) {
  // The magic string, the format's major and minor version, then the header's length: 2 bytes
  // in version 1, 4 in versions 2 and 3.
  unsigned char start[kMagicSize + 2 + 4] = {};
  file.read(reinterpret_cast<char*>(start), kMagicSize + 2);
  if (static_cast<size_t>(file.gcount()) < kMagicSize + 2 ||
      std::memcmp(start, kMagic, kMagicSize) != 0)
    bad(path, "not a NumPy .npy file (no \\x93NUMPY magic)");
  const unsigned major = start[kMagicSize];
  if (major < 1 || major > 3)
    bad(path, ".npy format version " + std::to_string(major) + " (hal reads 1 to 3)");
  const size_t length_size = major == 1 ? 2 : 4;
  file.read(reinterpret_cast<char*>(start + kMagicSize + 2),
            static_cast<std::streamsize>(length_size));
  if (static_cast<size_t>(file.gcount()) != length_size)
    bad(path, "the file ends inside its header");
  const size_t header_length = little_endian(start + kMagicSize + 2, length_size);
  // Refused before any allocation: a 4-byte length can claim gigabytes.
  const std::streampos header_at = file.tellg();
  file.seekg(0, std::ios::end);
  const std::streamoff left = file.tellg() - header_at;
  file.seekg(header_at);
  if (left < 0 || static_cast<size_t>(left) < header_length)
    bad(path, "the file ends inside its header");
  std::string text(header_length, '\0');
  file.read(text.data(), static_cast<std::streamsize>(header_length));
  if (static_cast<size_t>(file.gcount()) != header_length)
    bad(path, "the file ends inside its header");
  return {HeaderParser(text, path).parse(), kMagicSize + 2 + length_size + header_length,
          static_cast<size_t>(left) - header_length};
}

// A whole .npy file: its header, and its elements' bytes.
struct Contents {
  Header header;
  std::string elements;
  const unsigned char* data() const {
    return reinterpret_cast<const unsigned char*>(elements.data());
  }
  size_t data_size() const { return elements.size(); }
};

Contents read_contents(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) bad(path, "cannot open the file");
  Contents contents;
  contents.header = read_prefix(file, path).header;
  std::stringstream rest;
  rest << file.rdbuf();
  contents.elements = std::move(rest).str();
  return contents;
}

// That `data_size` bytes hold numel(shape) elements of `item_size` bytes each.
void check_size(const std::filesystem::path& path, const Shape& shape, size_t data_size,
                size_t item_size, const std::string& what) {
  int64_t count = 0;
  try {
    count = numel(shape);
  } catch (const Error& error) {  // more elements than int64 counts: named with the file
    bad(path, error.message());
  }
  const auto expected = detail::checked_mul(static_cast<size_t>(count), item_size);
  if (!expected || data_size != *expected)
    bad(path, "holds " + std::to_string(data_size) + " bytes of data; shape " + to_string(shape) +
                  " of " + what + " needs " +
                  (expected ? std::to_string(*expected) : std::string("more than memory holds")));
}

// A numeric .npy file opened, its header read and its size checked; `file` is left where the
// elements start.
struct NumericFile {
  std::ifstream file;
  Prefix prefix;
  DType dtype = DType::f32;
};

NumericFile open_numeric(const std::filesystem::path& path) {
  NumericFile out{std::ifstream(path, std::ios::binary), {}, DType::f32};
  if (!out.file) bad(path, "cannot open the file");
  out.prefix = read_prefix(out.file, path);
  out.dtype = dtype_of_descr(out.prefix.header.descr, path);
  check_size(path, out.prefix.header.shape, out.prefix.data_size, size_of(out.dtype),
             std::string(to_string(out.dtype)));
  return out;
}

// Row-major position -> the element's position in a Fortran-order (column-major) file.
size_t column_major(size_t index, const Shape& shape) {
  size_t offset = 0, stride = 1;
  std::vector<size_t> digits(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    digits[d] = index % static_cast<size_t>(shape[d]);
    index /= static_cast<size_t>(shape[d]);
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    offset += digits[d] * stride;
    stride *= static_cast<size_t>(shape[d]);
  }
  return offset;
}

void write_file(const std::filesystem::path& path, const std::string& descr, const Shape& shape,
                const void* elements, size_t size) {
  std::string dims = "(";
  for (int64_t extent : shape) dims += std::to_string(extent) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  if (shape.size() == 1) dims.pop_back();  // "(3,)"
  dims += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + dims + ", }";
  // Padded with spaces and a newline so that the data starts 64-byte aligned, as NumPy does.
  const size_t unpadded = kMagicSize + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  const unsigned char prefix[] = {1, 0, static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
  out.write(kMagic, kMagicSize);
  out.write(reinterpret_cast<const char*>(prefix), sizeof prefix);
  out << header;
  out.write(static_cast<const char*>(elements), static_cast<std::streamsize>(size));
  out.close();
  if (!out) bad(path, "cannot write the file");
}

// The elements of a file open_numeric has opened, as a row-major tensor.
Tensor read_elements(NumericFile& npy, const std::filesystem::path& path, Stream& stream) {
  const Header& header = npy.prefix.header;
  std::vector<unsigned char> elements(npy.prefix.data_size);
  npy.file.read(reinterpret_cast<char*>(elements.data()),
                static_cast<std::streamsize>(elements.size()));
  if (static_cast<size_t>(npy.file.gcount()) != elements.size())
    bad(path, "ends before its data does");  // shorter than when its size was checked
  if (!header.fortran_order) return from_host(elements.data(), header.shape, npy.dtype, stream);
  // Column-major: the reversed shape row-major, then its dimensions reversed.
  Shape reversed(header.shape.rbegin(), header.shape.rend());
  std::vector<int64_t> order(header.shape.size());
  std::iota(order.rbegin(), order.rend(), 0);
  return from_host(elements.data(), reversed, npy.dtype, stream).permute(order).contiguous(stream);
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path, Stream& stream) {
  NumericFile npy = open_numeric(path);
  return read_elements(npy, path, stream);
}

NpyInfo read_npy_info(const std::filesystem::path& path) {
  const NumericFile npy = open_numeric(path);
  return {npy.dtype, npy.prefix.header.shape, npy.prefix.header.fortran_order};
}

Tensor read_npy_rows(const std::filesystem::path& path, int64_t begin, int64_t end,
                     Stream& stream) {
  NumericFile npy = open_numeric(path);
  const Shape& full_shape = npy.prefix.header.shape;
  if (full_shape.empty()) bad(path, "holds a scalar, which has no rows");
  if (begin < 0 || begin > end || end > full_shape[0])
    throw Error(ErrorCode::OutOfRange, path.string() + ": rows [" + std::to_string(begin) + ", " +
                                           std::to_string(end) + ") of " +
                                           std::to_string(full_shape[0]));
  if (npy.prefix.header.fortran_order)  // a row's elements are apart: all of it, then the rows
    return read_elements(npy, path, stream).slice(0, begin, end).contiguous(stream);
  Shape shape = full_shape;
  shape[0] = end - begin;
  const size_t row_bytes =
      static_cast<size_t>(numel(full_shape) / std::max<int64_t>(full_shape[0], 1)) *
      size_of(npy.dtype);
  std::vector<unsigned char> rows(static_cast<size_t>(end - begin) * row_bytes);
  npy.file.seekg(
      static_cast<std::streamoff>(npy.prefix.data_start + static_cast<size_t>(begin) * row_bytes));
  npy.file.read(reinterpret_cast<char*>(rows.data()), static_cast<std::streamsize>(rows.size()));
  if (static_cast<size_t>(npy.file.gcount()) != rows.size())
    bad(path, "ends before row " + std::to_string(end));
  return from_host(rows.data(), shape, npy.dtype, stream);
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor, Stream& stream) {
  const bool bf16 = tensor.dtype() == DType::bf16;
  const DType written = bf16 ? DType::f32 : tensor.dtype();
  std::string descr;
  for (const auto& [code, dtype] : type_codes())
    if (dtype == written) descr = (size_of(dtype) == 1 ? "|" : "<") + code;
  std::vector<unsigned char> elements(static_cast<size_t>(tensor.numel()) * size_of(written));
  tensor.copy_to_host(elements.data(), stream);
  stream.synchronize();
  if (bf16) {
    // Widened on the host, where a device may have no bf16 cast (Vulkan): a bf16 is the top
    // half of the f32 of the same value. Backwards, in place: element i's f32 is at 4i, its
    // bf16 at 2i.
    for (size_t i = static_cast<size_t>(tensor.numel()); i-- > 0;) {
      uint16_t half;
      std::memcpy(&half, elements.data() + 2 * i, sizeof half);
      const uint32_t word = uint32_t{half} << 16;
      std::memcpy(elements.data() + 4 * i, &word, sizeof word);
    }
  }
  write_file(path, descr, tensor.shape(), elements.data(), elements.size());
}

StringTensor read_npy_strings(const std::filesystem::path& path) {
  const Contents contents = read_contents(path);
  const Header& header = contents.header;
  const auto type = string_type(header.descr);
  if (!type) bad(path, "NumPy dtype '" + header.descr + "' is not strings ('<U<n>' or '|S<n>')");
  check_size(path, header.shape, contents.data_size(), type->item_size(), "'" + header.descr + "'");
  StringTensor tensor{header.shape, {}};
  // Strings of no characters need no data, so the data does not bound their number.
  if (type->width == 0 && tensor.numel() > (int64_t{1} << 24))
    bad(path, "shape " + to_string(header.shape) + " of '" + header.descr +
                  "' holds more empty strings than hal reads");
  const auto count = static_cast<size_t>(tensor.numel());
  tensor.data.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t at = header.fortran_order ? column_major(i, header.shape) : i;
    const unsigned char* item = contents.data() + at * type->item_size();
    if (!type->unicode) {  // bytes, as they are
      std::string text(reinterpret_cast<const char*>(item), type->width);
      text.erase(text.find_last_not_of('\0') + 1);
      tensor.data.push_back(std::move(text));
      continue;
    }
    std::u32string points;
    for (size_t k = 0; k < type->width; ++k) {
      const unsigned char* unit = item + 4 * k;
      const char32_t c = type->big_endian ? char32_t{unit[0]} << 24 | char32_t{unit[1]} << 16 |
                                                char32_t{unit[2]} << 8 | unit[3]
                                          : static_cast<char32_t>(little_endian(unit, 4));
      if (!model::is_scalar_value(c))
        bad(path, "element " + std::to_string(i) + " holds " + std::to_string(c) +
                      ", which is not a Unicode code point");
      points += c;
    }
    // NumPy pads with NULs and drops them when it reads: trailing NULs are padding.
    points.erase(points.find_last_not_of(U'\0') + 1);
    tensor.data.push_back(model::utf8_encode(points));
  }
  return tensor;
}

void write_npy(const std::filesystem::path& path, const StringTensor& tensor) {
  if (numel(tensor.shape) != static_cast<int64_t>(tensor.data.size()))
    bad(path, "a string tensor of shape " + to_string(tensor.shape) + " holds " +
                  std::to_string(tensor.data.size()) + " strings");
  std::vector<std::u32string> points;
  size_t width = 1;  // NumPy's narrowest, '<U1', even for empty strings
  for (size_t i = 0; i < tensor.data.size(); ++i) {
    auto decoded = model::utf8_decode(tensor.data[i]);
    if (!decoded) bad(path, "element " + std::to_string(i) + " is not UTF-8 text");
    width = std::max(width, decoded->size());
    points.push_back(std::move(*decoded));
  }
  std::vector<unsigned char> elements(points.size() * width * 4);
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t k = 0; k < points[i].size(); ++k)
      for (size_t b = 0; b < 4; ++b)
        elements[(i * width + k) * 4 + b] = static_cast<unsigned char>(points[i][k] >> (8 * b));
  write_file(path, "<U" + std::to_string(width), tensor.shape, elements.data(), elements.size());
}

}  // namespace hal
