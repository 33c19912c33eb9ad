// .npy files: a magic string, a version, a header that is a Python dict literal of three keys
// ('descr', 'fortran_order', 'shape'), then the raw elements. NumPy documents the format
// (numpy.lib.format); this reads exactly that dict and refuses anything else by name.
#include "hal/npy.hpp"

#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "hal/error.hpp"
#include "hal/ops.hpp"

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
        header.descr = quoted();
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
      {"u1", DType::u8},  {"i4", DType::i32}, {"i8", DType::i64}, {"b1", DType::boolean}};
  return codes;
}

DType dtype_of_descr(const std::string& descr, const std::filesystem::path& path) {
  if (descr.size() < 2) bad(path, "descr '" + descr + "' is not a NumPy type");
  const char order = descr[0];
  const auto code = type_codes().find(descr.substr(1));
  if (code == type_codes().end() || (order != '<' && order != '|' && order != '=' && order != '>'))
    throw Error(ErrorCode::Unsupported, path.string() + ": NumPy dtype '" + descr +
                                            "' (hal reads f4, f8, f2, i1, u1, i4, i8 and b1)");
  if (order == '>' && size_of(code->second) > 1)
    throw Error(ErrorCode::Unsupported, path.string() + ": big-endian data ('" + descr + "')");
  return code->second;
}

uint32_t little_endian(const unsigned char* bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = count; i-- > 0;) value = value << 8 | bytes[i];
  return value;
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path, Stream& stream) {
  std::ifstream file(path, std::ios::binary);
  if (!file) bad(path, "cannot open the file");
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string bytes = std::move(contents).str();
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic) != 0)
    bad(path, "not a NumPy .npy file (no \\x93NUMPY magic)");
  const unsigned major = data[kMagicSize];
  if (major < 1 || major > 3)
    bad(path, ".npy format version " + std::to_string(major) + " (hal reads 1 to 3)");
  const size_t length_size = major == 1 ? 2 : 4;
  const size_t header_start = kMagicSize + 2 + length_size;
  if (bytes.size() < header_start) bad(path, "the file ends inside its header");
  const size_t header_length = little_endian(data + kMagicSize + 2, length_size);
  if (bytes.size() < header_start + header_length) bad(path, "the file ends inside its header");
  const Header header =
      HeaderParser(std::string_view(bytes).substr(header_start, header_length), path).parse();
  const DType dtype = dtype_of_descr(header.descr, path);
  const size_t expected = static_cast<size_t>(numel(header.shape)) * size_of(dtype);
  const size_t held = bytes.size() - header_start - header_length;
  if (held != expected)
    bad(path, "holds " + std::to_string(held) + " bytes of data; shape " + to_string(header.shape) +
                  " of " + std::string(to_string(dtype)) + " needs " + std::to_string(expected));
  const void* elements = data + header_start + header_length;
  if (!header.fortran_order) return from_host(elements, header.shape, dtype, stream);
  // Column-major: the reversed shape row-major, then its dimensions reversed.
  Shape reversed(header.shape.rbegin(), header.shape.rend());
  std::vector<int64_t> order(header.shape.size());
  std::iota(order.rbegin(), order.rend(), 0);
  return from_host(elements, reversed, dtype, stream).permute(order).contiguous(stream);
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor, Stream& stream) {
  const Tensor values = tensor.dtype() == DType::bf16 ? cast(tensor, DType::f32, stream) : tensor;
  std::string descr;
  for (const auto& [code, dtype] : type_codes())
    if (dtype == values.dtype()) descr = (size_of(dtype) == 1 ? "|" : "<") + code;
  std::string shape = "(";
  for (int64_t size : values.shape()) shape += std::to_string(size) + ", ";
  if (values.dim() > 1) shape.resize(shape.size() - 2);
  if (values.dim() == 1) shape.pop_back();  // "(3,)"
  shape += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Padded with spaces and a newline so that the data starts 64-byte aligned, as NumPy does.
  const size_t unpadded = kMagicSize + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::vector<unsigned char> elements(values.nbytes());
  values.copy_to_host(elements.data(), stream);
  stream.synchronize();
  std::ofstream out(path, std::ios::binary);
  const unsigned char prefix[] = {1, 0, static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
  out.write(kMagic, kMagicSize);
  out.write(reinterpret_cast<const char*>(prefix), sizeof prefix);
  out << header;
  out.write(reinterpret_cast<const char*>(elements.data()),
            static_cast<std::streamsize>(elements.size()));
  out.close();
  if (!out) bad(path, "cannot write the file");
}

}  // namespace hal
