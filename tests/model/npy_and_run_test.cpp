// .npy files (hal/npy.hpp) against NumPy itself, their errors, and `hal run` end to end on one
// of ONNX's test models: inputs from .npy, outputs written as .npy and checked against ONNX's
// expected output.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "hal/model.hpp"
#include "hal/npy.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("hal_npy_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

const std::string& kCliSanitizer = child_sanitizer_options();

bool have_numpy() { return run_shell("/usr/bin/python3 -c 'import numpy'").status == 0; }

TEST(Npy, EveryDtypeRoundTrips) {
  Stream stream = device("cpu:0").create_stream();
  const fs::path file = scratch_dir() / "round.npy";
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::i8, DType::u8, DType::i32,
                      DType::i64, DType::boolean}) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{0, 4}}) {
      const Tensor original =
          cast(arange(0, static_cast<double>(numel(shape)), 1, DType::f32, stream).reshape(shape),
               dtype, stream);
      write_npy(file, original, stream);
      const Tensor back = read_npy(file, stream);
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(cast(back, DType::f64, stream).to_vector<double>(stream),
                cast(original, DType::f64, stream).to_vector<double>(stream))
          << to_string(dtype) << " " << to_string(shape);
    }
  }
}

TEST(Npy, NumPyReadsWhatHalWritesAndTheOtherWayRound) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy (Debian: python3-numpy)";
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir();
  write_npy(dir / "from_hal.npy", from_vector<int32_t>({1, -2, 3, 4, 5, -6}, {2, 3}, stream),
            stream);
  const ShellResult check = run_shell(
      "/usr/bin/python3 -c \"import numpy as np; a = np.load('" + (dir / "from_hal.npy").string() +
      "'); assert a.dtype == np.int32 and a.shape == (2, 3) and a.tolist() "
      "== [[1, -2, 3], [4, 5, -6]], a\"");
  EXPECT_EQ(check.status, 0) << check.output;
  const ShellResult make = run_shell(
      "/usr/bin/python3 -c \"import numpy as np; "
      "np.save('" +
      (dir / "c.npy").string() +
      "', np.arange(6, dtype=np.float16).reshape(2, 3)); "
      "np.save('" +
      (dir / "f.npy").string() +
      "', np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)))\"");
  ASSERT_EQ(make.status, 0) << make.output;
  const Tensor c = read_npy(dir / "c.npy", stream);
  EXPECT_EQ(c.dtype(), DType::f16);
  EXPECT_EQ(cast(c, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{0, 1, 2, 3, 4, 5}));
  const Tensor f = read_npy(dir / "f.npy", stream);  // Fortran order, given back row-major
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.to_vector<double>(stream), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

// What hal eval reads to split a data set across processes: a file's dtype and shape from its
// header, and a range of its rows without the rest.
TEST(Npy, RowsAreReadWithoutTheRestOfTheFile) {
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir();
  const Tensor all = arange(0, 21, 1, DType::f32, stream).reshape({7, 3});
  write_npy(dir / "rows.npy", all, stream);
  const NpyInfo info = read_npy_info(dir / "rows.npy");
  EXPECT_EQ(info.dtype, DType::f32);
  EXPECT_EQ(info.shape, (Shape{7, 3}));
  EXPECT_FALSE(info.fortran_order);
  const Tensor middle = read_npy_rows(dir / "rows.npy", 2, 5, stream);
  EXPECT_EQ(middle.shape(), (Shape{3, 3}));
  EXPECT_EQ(middle.to_vector<float>(stream),
            all.slice(0, 2, 5).contiguous(stream).to_vector<float>(stream));
  EXPECT_EQ(read_npy_rows(dir / "rows.npy", 7, 7, stream).shape(), (Shape{0, 3}));
  expect_error([&] { read_npy_rows(dir / "rows.npy", 5, 8, stream); }, ErrorCode::OutOfRange,
               {"rows.npy", "rows [5, 8) of 7"});
  // A Fortran-order file (a row's elements apart): the rows all the same.
  std::string header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // data 64-byte aligned
  header += '\n';
  std::string bytes =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  const float column_major[] = {0, 3, 1, 4, 2, 5};  // [[0, 1, 2], [3, 4, 5]]
  bytes.append(reinterpret_cast<const char*>(column_major), sizeof column_major);
  std::ofstream(dir / "fortran.npy", std::ios::binary) << bytes;
  EXPECT_TRUE(read_npy_info(dir / "fortran.npy").fortran_order);
  EXPECT_EQ(read_npy_rows(dir / "fortran.npy", 1, 2, stream).to_vector<float>(stream),
            (std::vector<float>{3, 4, 5}));
  // Format version 2 (a 4-byte header length; NumPy writes it for headers over 64 KiB) reads
  // the same, and one whose length runs past the file is refused before anything is allocated.
  std::string v2_header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
  v2_header.append((64 - (12 + v2_header.size() + 1) % 64) % 64, ' ');
  v2_header += '\n';
  const uint32_t v2_length = static_cast<uint32_t>(v2_header.size());
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8) +
                   std::string(reinterpret_cast<const char*>(&v2_length), 4) + v2_header;
  const int32_t v2_values[] = {-7, 9};
  v2.append(reinterpret_cast<const char*>(v2_values), sizeof v2_values);
  std::ofstream(dir / "v2.npy", std::ios::binary) << v2;
  EXPECT_EQ(read_npy(dir / "v2.npy", stream).to_vector<int32_t>(stream),
            (std::vector<int32_t>{-7, 9}));
  EXPECT_EQ(read_npy_rows(dir / "v2.npy", 1, 2, stream).to_vector<int32_t>(stream),
            (std::vector<int32_t>{9}));
  std::string claims =
      std::string("\x93NUMPY\x02\x00", 8) + std::string("\xff\xff\xff\x7f", 4) + "{'descr'";
  std::ofstream(dir / "claims.npy", std::ios::binary) << claims;
  expect_error([&] { read_npy_info(dir / "claims.npy"); }, ErrorCode::InvalidArgument,
               {"claims.npy", "ends inside its header"});
  // The size is checked from the header alone, and a scalar has no rows.
  fs::resize_file(dir / "rows.npy", fs::file_size(dir / "rows.npy") - 4);
  expect_error([&] { read_npy_info(dir / "rows.npy"); }, ErrorCode::InvalidArgument,
               {"rows.npy", "holds 80 bytes", "needs 84"});
  write_npy(dir / "scalar.npy", full({}, 1.0, DType::f32, stream), stream);
  expect_error([&] { read_npy_rows(dir / "scalar.npy", 0, 0, stream); }, ErrorCode::InvalidArgument,
               {"scalar.npy", "scalar"});
}

// A '|b1' file whose bytes are not all 0 or 1 (NumPy writes what a view of other bytes holds):
// each nonzero byte is true, read as 1 on every device (OpenCL and Vulkan cast a byte of 2 to
// 2, the CPU to 1).
TEST(Npy, BoolBytesOtherThanOneReadAsTrueOnEveryDevice) {
  const fs::path file = scratch_dir() / "flags.npy";
  std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  bytes.append(std::string("\x00\x01\x02\xff\x80\x00", 6));
  std::ofstream(file, std::ios::binary) << bytes;
  for (const Device& where : devices()) {
    SCOPED_TRACE(where.id());
    Stream stream = where.create_stream();
    const auto stored = [&](const Tensor& t) {
      std::vector<unsigned char> got(t.nbytes());
      stream.copy_to_host(got.data(), t.storage(), got.size());
      stream.synchronize();
      return got;
    };
    const Tensor flags = read_npy(file, stream);
    EXPECT_EQ(flags.dtype(), DType::boolean);
    EXPECT_EQ(stored(flags), (std::vector<unsigned char>{0, 1, 1, 1, 1, 0}));
    EXPECT_EQ(stored(read_npy_rows(file, 1, 2, stream)), (std::vector<unsigned char>{1, 1, 0}));
    const DeviceInfo& info = where.info();
    if (info.has_feature(feature::kHostKernels) || info.has_feature(feature::kPortableKernels) ||
        info.backend() == "vulkan") {
      EXPECT_EQ(cast(flags, DType::i32, stream).to_vector<int32_t>(stream),
                (std::vector<int32_t>{0, 1, 1, 1, 1, 0}));
    }
  }
}

TEST(Npy, BadFilesAreRefusedNamingTheFileAndWhatIsWrong) {
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir();
  auto file_with = [&](const std::string& name, const std::string& header, size_t data_bytes) {
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header + std::string(data_bytes, '\0');
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return dir / name;
  };
  expect_error([&] { read_npy(dir / "absent.npy", stream); }, ErrorCode::InvalidArgument,
               {"absent.npy", "cannot open"});
  std::ofstream(dir / "text.npy") << "not numpy at all";
  expect_error([&] { read_npy(dir / "text.npy", stream); }, ErrorCode::InvalidArgument,
               {"text.npy", "magic"});
  const auto short_data =
      file_with("short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 20);
  expect_error([&] { read_npy(short_data, stream); }, ErrorCode::InvalidArgument,
               {"short.npy", "holds 20 bytes", "needs 24"});
  const auto complex =
      file_with("complex.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", 8);
  expect_error([&] { read_npy(complex, stream); }, ErrorCode::Unsupported,
               {"complex.npy", "'<c8'"});
  const auto big =
      file_with("big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", 4);
  expect_error([&] { read_npy(big, stream); }, ErrorCode::Unsupported, {"big.npy", "big-endian"});
  const auto odd =
      file_with("odd.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }\n", 4);
  expect_error([&] { read_npy(odd, stream); }, ErrorCode::InvalidArgument,
               {"odd.npy", "fortran_order"});
  const auto cut = file_with("cut.npy", "{'descr': '<f4', 'shape': (1,", 0);
  expect_error([&] { read_npy(cut, stream); }, ErrorCode::InvalidArgument, {"cut.npy", "header"});
  // A structured dtype (np.zeros(2, dtype=[('x', '<f4'), ('y', '<i4')])): its descr is a list
  // of fields, which the parser refused as "expected a string"; Unsupported, naming it.
  const auto fields = file_with(
      "fields.npy",
      "{'descr': [('x', '<f4'), ('y', '<i4')], 'fortran_order': False, 'shape': (2,), }\n", 16);
  expect_error([&] { read_npy(fields, stream); }, ErrorCode::Unsupported,
               {"fields.npy", "[('x', '<f4'), ('y', '<i4')]", "structured"});
  expect_error([&] { read_npy_info(fields); }, ErrorCode::Unsupported,
               {"fields.npy", "structured"});
  const auto nested = file_with("nested.npy",
                                "{'descr': [('x', '<f4', (2,)), ('y]', [('a', '<i4')])], "
                                "'fortran_order': False, 'shape': (1,), }\n",
                                12);
  expect_error([&] { read_npy(nested, stream); }, ErrorCode::Unsupported,
               {"nested.npy", "[('x', '<f4', (2,)), ('y]', [('a', '<i4')])]"});
  expect_error([&] { read_npy_strings(nested); }, ErrorCode::InvalidArgument,
               {"nested.npy", "is not strings"});
  const auto open_list =
      file_with("open_list.npy", "{'descr': [('x', '<f4'), 'fortran_order': False}\n", 0);
  expect_error([&] { read_npy(open_list, stream); }, ErrorCode::InvalidArgument,
               {"open_list.npy", "a list does not end"});
  // A shape of more elements than int64 counts: refused naming the file, as every other header
  // fault is (numel's own message lacked it).
  const auto huge = file_with(
      "huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n",
      0);
  expect_error([&] { read_npy(huge, stream); }, ErrorCode::InvalidArgument,
               {"huge.npy: shape [4611686018427387904, 4] has more elements than int64 can count"});
  const auto huge_strings = file_with(
      "huge_strings.npy",
      "{'descr': '<U1', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n", 0);
  expect_error([&] { read_npy_strings(huge_strings); }, ErrorCode::InvalidArgument,
               {"huge_strings.npy: shape [4611686018427387904, 4] has more elements"});
}

// bf16, which NumPy has not, is written as f32 widened on the host from its bits: Vulkan, which
// has no bf16 cast, refused write_npy of it.
TEST(Npy, Bf16IsWrittenAsF32OnEveryDevice) {
  const fs::path file = scratch_dir() / "bf16.npy";
  // 1, -2.5, 2^-133 (a subnormal), the largest bf16, and 1 + 2^-7: exact in bf16 and in f32.
  const std::vector<uint16_t> bits = {0x3f80, 0xc020, 0x0001, 0x7f7f, 0x3f81, 0x8000};
  std::vector<float> want;
  for (uint16_t b : bits) {
    const uint32_t word = uint32_t{b} << 16;
    float value;
    std::memcpy(&value, &word, sizeof value);
    want.push_back(value);
  }
  for (const Device& where : devices()) {
    SCOPED_TRACE(where.id());
    Stream stream = where.create_stream();
    Stream cpu = device("cpu:0").create_stream();
    const Tensor t = from_host(bits.data(), {2, 3}, DType::bf16, stream);
    write_npy(file, t, stream);
    const Tensor back = read_npy(file, cpu);
    EXPECT_EQ(back.dtype(), DType::f32);
    EXPECT_EQ(back.shape(), (Shape{2, 3}));
    const std::vector<float> got = back.to_vector<float>(cpu);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
    // A strided view is written in its own (row-major) order.
    write_npy(file, t.transpose(0, 1), stream);
    EXPECT_EQ(read_npy(file, cpu).to_vector<float>(cpu),
              (std::vector<float>{want[0], want[3], want[1], want[4], want[2], want[5]}));
  }
}

TEST(Npy, StringsRoundTripAsNumPyUnicode) {
  const fs::path file = scratch_dir() / "strings.npy";
  // "héllo" (5 code points) is the widest: '<U5', "日本語🙂" 4 code points in 13 bytes.
  const StringTensor table{
      {2, 2}, {"", "a", "h\xc3\xa9llo", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xf0\x9f\x99\x82"}};
  write_npy(file, table);
  EXPECT_EQ(read_npy_strings(file), table);
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("'descr': '<U5'"), std::string::npos);
  EXPECT_EQ(bytes.size() % 64, (4u * 5 * 4) % 64);  // the data, 64-byte aligned, then 4 x 5 x 4
  for (const StringTensor& tensor :
       {StringTensor{{}, {"scalar"}}, StringTensor{{0, 3}, {}}, StringTensor{{3}, {"", "", ""}}}) {
    write_npy(file, tensor);
    EXPECT_EQ(read_npy_strings(file), tensor) << to_string(tensor.shape);
  }
}

TEST(Npy, NumPyReadsHalsStringsAndTheOtherWayRound) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy (Debian: python3-numpy)";
  const fs::path dir = scratch_dir();
  write_npy(dir / "from_hal.npy",
            StringTensor{{2, 2}, {"", "a", "h\xc3\xa9llo", "\xf0\x9f\x99\x82"}});
  const ShellResult check = run_shell(
      "/usr/bin/python3 -c \"import numpy as np; a = np.load('" + (dir / "from_hal.npy").string() +
      "'); assert a.dtype == np.dtype('<U5') and a.tolist() == [['', 'a'], "
      "['h\\u00e9llo', '\\U0001f642']], a\"");
  EXPECT_EQ(check.status, 0) << check.output;
  const ShellResult make = run_shell(
      "/usr/bin/python3 -c \"import numpy as np; d = '" + dir.string() +
      "/'; np.save(d + 'u.npy', np.array([['ab', 'c'], ['', 'd\\u00e9']])); "
      "np.save(d + 's.npy', np.array([b'ab', b'c'])); "
      "np.save(d + 'f.npy', np.asfortranarray(np.array([['a', 'b', 'c'], ['d', 'e', 'f']]))); "
      "np.save(d + 'big.npy', np.array(['xy', 'z'], dtype='>U2'))\"");
  ASSERT_EQ(make.status, 0) << make.output;
  EXPECT_EQ(read_npy_strings(dir / "u.npy"), (StringTensor{{2, 2}, {"ab", "c", "", "d\xc3\xa9"}}));
  EXPECT_EQ(read_npy_strings(dir / "s.npy"), (StringTensor{{2}, {"ab", "c"}}));
  EXPECT_EQ(read_npy_strings(dir / "f.npy"),  // Fortran order, given back row-major
            (StringTensor{{2, 3}, {"a", "b", "c", "d", "e", "f"}}));
  EXPECT_EQ(read_npy_strings(dir / "big.npy"), (StringTensor{{2}, {"xy", "z"}}));
}

TEST(Npy, BadStringFilesAreRefusedNamingTheFile) {
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir();
  auto file_with = [&](const std::string& name, const std::string& header, std::string data) {
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header + data;
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return dir / name;
  };
  const auto short_data =
      file_with("short_u.npy", "{'descr': '<U2', 'fortran_order': False, 'shape': (3,), }\n",
                std::string(20, 'a'));
  expect_error([&] { read_npy_strings(short_data); }, ErrorCode::InvalidArgument,
               {"short_u.npy", "holds 20 bytes", "'<U2'", "needs 24"});
  const auto beyond =
      file_with("beyond.npy", "{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }\n",
                std::string("\x00\x00\x11\x00", 4));  // U+110000
  expect_error([&] { read_npy_strings(beyond); }, ErrorCode::InvalidArgument,
               {"beyond.npy", "element 0", "not a Unicode code point"});
  const auto text =
      file_with("text.npy", "{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }\n",
                std::string("a\0\0\0", 4));
  expect_error([&] { read_npy(text, stream); }, ErrorCode::Unsupported,
               {"text.npy", "'<U1'", "read_npy_strings"});
  const auto numbers =
      file_with("numbers.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n",
                std::string(4, '\0'));
  expect_error([&] { read_npy_strings(numbers); }, ErrorCode::InvalidArgument,
               {"numbers.npy", "'<f4'", "not strings"});
  expect_error(
      [&] {
        write_npy(dir / "latin1.npy", StringTensor{{1}, {"caf\xe9"}});
      },
      ErrorCode::InvalidArgument, {"latin1.npy", "element 0 is not UTF-8"});
  expect_error(
      [&] {
        write_npy(dir / "count.npy", StringTensor{{2}, {"a"}});
      },
      ErrorCode::InvalidArgument, {"count.npy", "shape [2] holds 1 strings"});
}

TEST(HalRun, RunsAStringModelFromNumPyStrings) {
  const fs::path model_dir =
      "/usr/share/libonnx-testdata/data/node/"
      "test_strnormalizer_export_monday_insensintive_upper_twodim";
  if (!fs::exists(model_dir / "model.onnx"))
    GTEST_SKIP() << "no ONNX test data (Debian: libonnx-testdata)";
  Stream stream = device("cpu:0").create_stream();
  const Model model = load_onnx(model_dir / "model.onnx");
  const fs::path dir = scratch_dir() / "strings_run";
  fs::create_directories(dir);
  const auto x = std::get<StringTensor>(
      read_onnx_value(model_dir / "test_data_set_0" / "input_0.pb", model.inputs()[0], stream));
  const auto expected = std::get<StringTensor>(
      read_onnx_value(model_dir / "test_data_set_0" / "output_0.pb", model.outputs()[0], stream));
  write_npy(dir / "x.npy", x);
  const std::string command = kCliSanitizer + HAL_CLI_PATH " run " +
                              (model_dir / "model.onnx").string() +
                              " --input x=" + (dir / "x.npy").string() + " --json --output ";
  for (const std::string device_args : {" --device cpu:0", " --device auto --plan"}) {
    const fs::path out = dir / (device_args.size() > 16 ? "planned" : "direct");
    const ShellResult run = run_shell(command + out.string() + device_args);
    ASSERT_EQ(run.status, 0) << run.output;
    const auto report = nlohmann::json::parse(run.output);
    EXPECT_EQ(report["outputs"][0]["dtype"], "string");
    EXPECT_EQ(report["outputs"][0]["shape"], nlohmann::json(expected.shape));
    EXPECT_EQ(read_npy_strings(out / "y.npy"), expected) << device_args;
    if (report.contains("plan")) {
      EXPECT_EQ(report["plan"]["nodes"][0]["device"], "cpu:0");
    }
  }
  write_npy(dir / "numbers.npy", from_vector<float>({1, 2}, {1, 2}, stream), stream);
  const ShellResult wrong =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + (model_dir / "model.onnx").string() +
                " --input x=" + (dir / "numbers.npy").string());
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.output.find("numbers.npy"), std::string::npos) << wrong.output;
  EXPECT_NE(wrong.output.find("not strings"), std::string::npos) << wrong.output;
}

// Outputs named "a/b" and "a_b" both make the file name a_b.npy: the second is written to
// a_b_2.npy (it overwrote the first), and the report says which file holds which.
TEST(HalRun, OutputsWhoseNamesMakeOneFileNameEachGetAFile) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {"2"});
  builder.output("a/b", onnx::TensorProto::FLOAT, {"2"});
  builder.output("a_b", onnx::TensorProto::FLOAT, {"2"});
  builder.node("Identity", {"x"}, {"a/b"}, "same");
  builder.node("Neg", {"x"}, {"a_b"}, "negated");
  const fs::path dir = scratch_dir() / "clash";
  fs::create_directories(dir);
  std::ofstream(dir / "model.onnx", std::ios::binary) << builder.bytes();
  Stream stream = device("cpu:0").create_stream();
  write_npy(dir / "x.npy", from_vector<float>({1.5f, -2}, {2}, stream), stream);
  const ShellResult run = run_shell(
      kCliSanitizer + HAL_CLI_PATH " run " + (dir / "model.onnx").string() +
      " --input x=" + (dir / "x.npy").string() + " --json --output " + (dir / "out").string());
  ASSERT_EQ(run.status, 0) << run.output;
  const auto report = nlohmann::json::parse(run.output);
  ASSERT_EQ(report["outputs"].size(), 2u);
  EXPECT_EQ(report["outputs"][0]["file"], (dir / "out" / "a_b.npy").string());
  EXPECT_EQ(report["outputs"][1]["file"], (dir / "out" / "a_b_2.npy").string());
  EXPECT_EQ(read_npy(dir / "out" / "a_b.npy", stream).to_vector<float>(stream),
            (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(read_npy(dir / "out" / "a_b_2.npy", stream).to_vector<float>(stream),
            (std::vector<float>{-1.5f, 2}));
}

// y = x - w, where w is an optional input (IR 8) whose initializer [1, 2] is its default: --input
// may give it, on one device or through the plan, or leave it out. Through the plan it was
// refused ("the model has no input 'w'": the planner took required inputs only).
TEST(HalRun, AnOptionalInputMayBeGivenOrLeftToItsDefault) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {"2"}).input("w", onnx::TensorProto::FLOAT, {"2"});
  builder.output("y", onnx::TensorProto::FLOAT, {"2"});
  builder.initializer("w", {2}, {1, 2});
  builder.node("Sub", {"x", "w"}, {"y"}, "minus");
  const fs::path dir = scratch_dir() / "optional_input";
  fs::create_directories(dir);
  std::ofstream(dir / "model.onnx", std::ios::binary) << builder.bytes();
  Stream stream = device("cpu:0").create_stream();
  write_npy(dir / "x.npy", from_vector<float>({10, 20}, {2}, stream), stream);
  write_npy(dir / "w.npy", from_vector<float>({100, 200}, {2}, stream), stream);
  write_npy(dir / "w3.npy", from_vector<float>({1, 2, 3}, {3}, stream), stream);
  const std::string command = kCliSanitizer + HAL_CLI_PATH " run " + (dir / "model.onnx").string() +
                              " --input x=" + (dir / "x.npy").string();
  for (const std::string device_args : {" --device cpu:0", " --device auto --plan"}) {
    for (const bool give_w : {true, false}) {
      const fs::path out = dir / "out";
      fs::remove_all(out);
      const ShellResult run =
          run_shell(command + (give_w ? " --input w=" + (dir / "w.npy").string() : "") +
                    device_args + " --json --output " + out.string());
      ASSERT_EQ(run.status, 0) << device_args << ": " << run.output;
      EXPECT_EQ(read_npy(out / "y.npy", stream).to_vector<float>(stream),
                (give_w ? std::vector<float>{-90, -180} : std::vector<float>{9, 18}))
          << device_args << (give_w ? " with w" : " without w");
    }
    const ShellResult wrong =
        run_shell(command + " --input w=" + (dir / "w3.npy").string() + device_args);
    EXPECT_EQ(wrong.status, 1) << device_args;
    EXPECT_NE(wrong.output.find("input 'w'"), std::string::npos) << wrong.output;
    EXPECT_NE(wrong.output.find("declares [2]"), std::string::npos) << wrong.output;
  }
}

TEST(HalRun, RunsAnOnnxTestModelFromNpyFilesAndWritesItsOutputs) {
  const fs::path model_dir = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding";
  if (!fs::exists(model_dir / "model.onnx"))
    GTEST_SKIP() << "no ONNX test data (Debian: libonnx-testdata)";
  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir() / "run";
  fs::create_directories(dir);
  std::string args;
  for (int i = 0; i < 2; ++i) {
    std::string name;
    const Tensor input = read_onnx_tensor(
        model_dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"), stream, &name);
    write_npy(dir / (name + ".npy"), input, stream);
    args += " --input " + name + "=" + (dir / (name + ".npy")).string();
  }
  const ShellResult run =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + (model_dir / "model.onnx").string() + args +
                " --output " + (dir / "out").string() + " --repeat 3");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("latency over 3 run(s)"), std::string::npos) << run.output;
  const Tensor expected = read_onnx_tensor(model_dir / "test_data_set_0" / "output_0.pb", stream);
  const Tensor actual = read_npy(dir / "out" / "y.npy", stream);
  ASSERT_EQ(actual.shape(), expected.shape());
  const auto a = actual.to_vector<float>(stream), e = expected.to_vector<float>(stream);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], 1e-4 + 1e-4 * std::abs(e[i])) << i;

  const ShellResult wrong =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + (model_dir / "model.onnx").string() + args +
                " --input nope=" + (dir / "x.npy").string());
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.output.find("no input 'nope'"), std::string::npos) << wrong.output;
  const ShellResult malformed = run_shell(kCliSanitizer + HAL_CLI_PATH " run " +
                                          (model_dir / "model.onnx").string() + " --input x");
  EXPECT_EQ(malformed.status, 1);
  EXPECT_NE(malformed.output.find("expected NAME=FILE.npy"), std::string::npos) << malformed.output;
}

TEST(HalRun, PlansWithoutRunningAndRunsThroughThePlan) {
  const fs::path model_dir = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding";
  if (!fs::exists(model_dir / "model.onnx"))
    GTEST_SKIP() << "no ONNX test data (Debian: libonnx-testdata)";
  const std::string model = (model_dir / "model.onnx").string();
  const ShellResult planned =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + model + " --plan --json --device cpu:0");
  ASSERT_EQ(planned.status, 0) << planned.output;
  const auto plan = nlohmann::json::parse(planned.output);
  EXPECT_EQ(plan["schema"], "hal.plan/1");
  ASSERT_EQ(plan["nodes"].size(), 1u);
  EXPECT_EQ(plan["nodes"][0]["op"], "Conv");
  EXPECT_EQ(plan["nodes"][0]["device"], "cpu:0");
  EXPECT_EQ(plan["nodes"][0]["reason"], "pinned");
  // x [1,1,7,5], W [1,1,3,3], y [1,1,4,3] in f32, each rounded up to 256 bytes: all alive at
  // the convolution.
  EXPECT_EQ(plan["lower_bound_bytes"], 3 * 256);
  EXPECT_EQ(plan["peak_bytes"], 3 * 256);
  EXPECT_TRUE(plan["unknown_shapes"].empty());

  Stream stream = device("cpu:0").create_stream();
  const fs::path dir = scratch_dir() / "planned";
  fs::create_directories(dir);
  std::string args;
  for (int i = 0; i < 2; ++i) {
    std::string name;
    const Tensor input = read_onnx_tensor(
        model_dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"), stream, &name);
    write_npy(dir / (name + ".npy"), input, stream);
    args += " --input " + name + "=" + (dir / (name + ".npy")).string();
  }
  const ShellResult run =
      run_shell(kCliSanitizer + HAL_CLI_PATH " run " + model + args + " --device auto --plan " +
                "--json --output " + (dir / "out").string());
  ASSERT_EQ(run.status, 0) << run.output;
  const auto report = nlohmann::json::parse(run.output);
  EXPECT_EQ(report["schema"], "hal.run/1");
  EXPECT_EQ(report["device"], "auto");
  EXPECT_EQ(report["plan"]["schema"], "hal.plan/1");
  EXPECT_TRUE(report["fallbacks"].is_array());
  const Tensor expected = read_onnx_tensor(model_dir / "test_data_set_0" / "output_0.pb", stream);
  const Tensor actual = read_npy(dir / "out" / "y.npy", stream);
  ASSERT_EQ(actual.shape(), expected.shape());
  const auto a = actual.to_vector<float>(stream), e = expected.to_vector<float>(stream);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], 1e-4 + 1e-4 * std::abs(e[i])) << i;
}

}  // namespace
}  // namespace hal::test
