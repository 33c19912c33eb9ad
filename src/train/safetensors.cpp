// The safetensors format: writing (header, then each tensor's bytes in order, through a
// temporary file renamed over the target) and reading (every field checked before a tensor is
// made). nlohmann::json parses and prints the header.
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/atomic_file.hpp"
#include "core/checked_math.hpp"
#include "hal/checkpoint.hpp"
#include "hal/error.hpp"

namespace hal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this host would need byte swaps");

constexpr uint64_t kMaxHeader = 100u << 20;  // the safetensors library's own limit

const std::pair<DType, const char*> kDtypeNames[] = {
    {DType::f32, "F32"},     {DType::f16, "F16"}, {DType::bf16, "BF16"}, {DType::f64, "F64"},
    {DType::i8, "I8"},       {DType::u8, "U8"},   {DType::i16, "I16"},   {DType::u16, "U16"},
    {DType::i32, "I32"},     {DType::u32, "U32"}, {DType::i64, "I64"},   {DType::u64, "U64"},
    {DType::boolean, "BOOL"}};

const char* dtype_name(DType dtype) {
  for (const auto& [d, name] : kDtypeNames)
    if (d == dtype) return name;
  return "?";
}

[[noreturn]] void bad_file(const std::filesystem::path& path, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "safetensors file " + path.string() + ": " + why);
}

}  // namespace

void save_safetensors(const std::filesystem::path& path,
                      const std::vector<nn::NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata, Stream& stream) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const nn::NamedTensor& t : tensors) {
    if (!t.tensor.defined())
      throw Error(ErrorCode::InvalidArgument, "save_safetensors: '" + t.name + "' is undefined");
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw Error(ErrorCode::InvalidArgument, "save_safetensors " + path.string() + ": the name '" +
                                                  t.name + "' is reserved or given twice");
    const uint64_t bytes = t.tensor.nbytes();
    header[t.name] = {{"dtype", dtype_name(t.tensor.dtype())},
                      {"shape", t.tensor.shape()},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::vector<unsigned char> data(offset);
  offset = 0;
  for (const nn::NamedTensor& t : tensors) {
    t.tensor.copy_to_host(data.data() + offset, stream);
    offset += t.tensor.nbytes();
  }
  stream.synchronize();
  char length[8];
  const uint64_t size = text.size();
  std::memcpy(length, &size, 8);
  // Each save writes a file of its own beside `path` (ranks saving one path at once once
  // shared `path.tmp`, and a rename could take another's half-written file).
  const std::string failed = hal::detail::write_file_atomically(
      path, {std::string_view(length, 8), text,
             std::string_view(reinterpret_cast<const char*>(data.data()), data.size())});
  if (!failed.empty()) throw Error(ErrorCode::InvalidArgument, "save_safetensors: " + failed);
}

Safetensors load_safetensors(const std::filesystem::path& path, Stream& stream) {
  // A directory opens as a stream on Linux and reads as nothing, which was "not a JSON object".
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) bad_file(path, "is a directory, not a file");
  errno = 0;
  std::ifstream file(path, std::ios::binary);
  if (!file)
    bad_file(path,
             errno ? std::string("cannot be opened: ") + std::strerror(errno) : "cannot be opened");
  file.seekg(0, std::ios::end);
  const std::streamoff end = file.tellg();
  file.seekg(0);
  if (!file || end < 0) bad_file(path, "cannot be read (its size is unknown)");
  const auto size = static_cast<uint64_t>(end);
  if (size < 8) bad_file(path, "shorter than the 8-byte header length");
  uint64_t length = 0;
  file.read(reinterpret_cast<char*>(&length), 8);
  if (!file) bad_file(path, "cannot be read (the header length)");
  if (length > kMaxHeader || length > size - 8)
    bad_file(path, "the header claims " + std::to_string(length) + " bytes, the file holds " +
                       std::to_string(size - 8) + " after the length");
  std::string text(length, '\0');
  file.read(text.data(), static_cast<std::streamsize>(length));
  if (!file) bad_file(path, "cannot be read (the header)");
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) bad_file(path, "the header is not a JSON object");
  const uint64_t data_size = size - 8 - length;

  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  Safetensors out;
  for (const auto& item : header.items()) {
    // Named copies, not a structured binding: Clang before 16 cannot capture one in a lambda.
    const std::string& name = item.key();
    const nlohmann::json& value = item.value();
    if (name == "__metadata__") {
      if (!value.is_object()) bad_file(path, "__metadata__ is not an object of strings");
      for (const auto& [key, text_value] : value.items()) {
        if (!text_value.is_string()) bad_file(path, "__metadata__ '" + key + "' is not a string");
        out.metadata[key] = text_value.get<std::string>();
      }
      continue;
    }
    const auto field = [&](const char* key) -> const nlohmann::json& {
      if (!value.is_object() || !value.contains(key))
        bad_file(path, "tensor '" + name + "' has no " + key);
      return value.at(key);
    };
    Entry e{name, DType::f32, {}, 0, 0};
    const nlohmann::json& dtype = field("dtype");
    bool known = false;
    for (const auto& [d, dtype_text] : kDtypeNames)
      if (dtype.is_string() && dtype.get<std::string>() == dtype_text) {
        e.dtype = d;
        known = true;
      }
    if (!known)
      bad_file(path, "tensor '" + name + "' has dtype " + dtype.dump() + ", not one hal has");
    const nlohmann::json& shape = field("shape");
    if (!shape.is_array()) bad_file(path, "tensor '" + name + "' has no shape list");
    for (const nlohmann::json& size_value : shape) {
      if (!size_value.is_number_unsigned())
        bad_file(path, "tensor '" + name + "' has shape " + shape.dump());
      e.shape.push_back(static_cast<int64_t>(size_value.get<uint64_t>()));
    }
    const nlohmann::json& offsets = field("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      bad_file(path, "tensor '" + name + "' has data_offsets " + offsets.dump());
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    int64_t count = 0;
    try {
      count = numel(e.shape);
    } catch (const Error&) {
      bad_file(path, "tensor '" + name + "' has shape " + shape.dump() + ", too many elements");
    }
    // The byte count as a checked product: [2^61] f64 wraps to 0 bytes and would match [0, 0].
    const std::optional<uint64_t> bytes =
        detail::checked_mul(static_cast<uint64_t>(count), static_cast<uint64_t>(size_of(e.dtype)));
    if (!bytes || e.end < e.begin || e.end > data_size || e.end - e.begin != *bytes)
      bad_file(path, "tensor '" + name + "' (" + dtype.get<std::string>() + to_string(e.shape) +
                         ") has data_offsets " + offsets.dump() + " for " +
                         std::to_string(data_size) + " bytes of data");
    entries.push_back(std::move(e));
  }
  // The entries must tile the data: no overlaps, no gaps.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  uint64_t covered = 0;
  for (const Entry& e : entries) {
    if (e.begin != covered)
      bad_file(path, "tensor '" + e.name + "' starts at byte " + std::to_string(e.begin) +
                         " of the data, where " + std::to_string(covered) +
                         " was expected (the tensors overlap or leave a gap)");
    covered = e.end;
  }
  if (covered != data_size)
    bad_file(path, std::to_string(data_size - covered) + " bytes of data follow the last tensor");
  std::vector<unsigned char> data(data_size);
  file.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data_size));
  if (!file) bad_file(path, "could not be read to its end");
  for (const Entry& e : entries)
    out.tensors.push_back({e.name, from_host(data.data() + e.begin, e.shape, e.dtype, stream)});
  return out;
}

}  // namespace hal
