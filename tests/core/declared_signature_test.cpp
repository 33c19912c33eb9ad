// Reading a kernel's declared signature from its source, and checking arguments against it:
// what is read, and every kind of source that must give no signature rather than a wrong one.
#include "core/declared_signature.hpp"

#include <gtest/gtest.h>

#include "core/kernel_arg_check.hpp"
#include "core/scalar_type_size.hpp"

namespace hal::detail {
namespace {

using Kind = KernelArg::Kind;

std::optional<std::vector<KernelParam>> read(const std::string& code, const std::string& name,
                                             KernelLanguage language = KernelLanguage::portable,
                                             const CompileOptions& options = {}) {
  return declared_params({name, code, language}, options);
}

// "buffer x", "scalar4 a", "scalar0 r", "local s": kinds, sizes and names in one string.
std::string summary(const std::optional<std::vector<KernelParam>>& params) {
  if (!params) return "nullopt";
  std::string text;
  for (const KernelParam& param : *params) {
    if (!text.empty()) text += ", ";
    switch (param.kind) {
      case Kind::buffer:
        text += "buffer";
        break;
      case Kind::scalar:
        text += "scalar" + std::to_string(param.scalar_bytes);
        break;
      case Kind::local_memory:
        text += "local";
        break;
    }
    if (!param.name.empty()) text += " " + param.name;
  }
  return text;
}

TEST(ScalarTypeSize, BuiltinTypesInEverySpelling) {
  EXPECT_EQ(builtin_scalar_bytes("float"), 4u);
  EXPECT_EQ(builtin_scalar_bytes("double"), 8u);
  EXPECT_EQ(builtin_scalar_bytes("unsigned int"), 4u);
  EXPECT_EQ(builtin_scalar_bytes("unsigned"), 4u);
  EXPECT_EQ(builtin_scalar_bytes("uint"), 4u);
  EXPECT_EQ(builtin_scalar_bytes("signed char"), 1u);
  EXPECT_EQ(builtin_scalar_bytes("short int"), 2u);
  EXPECT_EQ(builtin_scalar_bytes("unsigned long long int"), 8u);
  EXPECT_EQ(builtin_scalar_bytes("ulong"), 8u);
  EXPECT_EQ(builtin_scalar_bytes("half"), 2u);
  EXPECT_EQ(builtin_scalar_bytes("uint16_t"), 2u);
  EXPECT_EQ(builtin_scalar_bytes("size_t"), 0u);  // the device's pointer size
  for (const char* type : {"long double", "float4", "real", "unsigned float", "char int",
                           "long long long", "struct s", ""})
    EXPECT_EQ(builtin_scalar_bytes(type), std::nullopt) << type;
}

TEST(DeclaredSignature, PortableSaxpy) {
  const auto params = read(R"(
    KERNEL void saxpy(float a, GLOBAL const float* x, GLOBAL float* y, uint n) {
      size_t i = global_id(0);
      if (i < n) y[i] = a * x[i] + y[i];
    })",
                           "saxpy");
  EXPECT_EQ(summary(params), "scalar4 a, buffer x, buffer y, scalar4 n");
  ASSERT_TRUE(params);
  EXPECT_EQ((*params)[1].type, "GLOBAL const float*");
  EXPECT_EQ((*params)[3].type, "uint");
}

TEST(DeclaredSignature, CommentsWhitespaceQualifiersAndMultiWordTypes) {
  EXPECT_EQ(summary(read(R"(
    // KERNEL void f(int wrong)
    /* KERNEL void f(double wrong) */
    KERNEL   void
    f ( GLOBAL const float * RESTRICT x /* the input */,
        unsigned int n, // count
        const unsigned long long big,
        unsigned   short s, signed char c, SHARED float* scratch, double d)
    {})",
                         "f")),
            "buffer x, scalar4 n, scalar8 big, scalar2 s, scalar1 c, local scratch, scalar8 d");
}

TEST(DeclaredSignature, EmptyAndVoidParameterLists) {
  EXPECT_EQ(summary(read("KERNEL void f() {}", "f")), "");
  EXPECT_EQ(summary(read("KERNEL void f(void) {}", "f")), "");
}

TEST(DeclaredSignature, UnnamedParameters) {
  EXPECT_EQ(summary(read("KERNEL void f(GLOBAL float*, unsigned int, float);", "f")),
            "buffer, scalar4, scalar4");
}

TEST(DeclaredSignature, OnlyTheNamedEntryPoint) {
  const char* code = R"(
    DEVICE_FN float helper(float a, int b) { return a * b; }
    KERNEL void first(GLOBAL float* x) {}
    KERNEL void second(int n, GLOBAL float* y) {}
  )";
  EXPECT_EQ(summary(read(code, "second")), "scalar4 n, buffer y");
  EXPECT_EQ(summary(read(code, "helper")), "nullopt");  // not a kernel
  EXPECT_EQ(summary(read(code, "missing")), "nullopt");
}

TEST(DeclaredSignature, DeclarationAndDefinitionAgree) {
  EXPECT_EQ(summary(read(R"(
    KERNEL void f(GLOBAL float*, int);
    KERNEL void f(GLOBAL float* x, int n) {})",
                         "f")),
            "buffer x, scalar4 n");
}

TEST(DeclaredSignature, DefinitionsThatDisagreeGiveNone) {
  EXPECT_EQ(summary(read(R"(
    #ifdef WIDE
    KERNEL void f(GLOBAL double* x, double a) {}
    #else
    KERNEL void f(GLOBAL float* x, float a) {}
    #endif)",
                         "f")),
            "nullopt");
}

TEST(DeclaredSignature, PreprocessorLinesInsideTheParametersGiveNone) {
  EXPECT_EQ(summary(read(R"(
    KERNEL void f(GLOBAL float* x,
    #ifdef EXTRA
                  float extra,
    #endif
                  int n) {})",
                         "f")),
            "nullopt");
}

TEST(DeclaredSignature, MacrosWithPlainWordValuesAreFollowed) {
  const char* code = "KERNEL void f(GLOBAL T* x, T a, INDEX n) {}";
  EXPECT_EQ(summary(read(code, "f", KernelLanguage::portable,
                         {.defines = {"T=double"}, .flags = "-DINDEX=ulong"})),
            "buffer x, scalar8 a, scalar8 n");
  EXPECT_EQ(summary(read(std::string("#define T float\n#define INDEX uint\n") + code, "f")),
            "buffer x, scalar4 a, scalar4 n");
  EXPECT_EQ(summary(read(std::string("#define T float\n") + code, "f", KernelLanguage::portable,
                         {.flags = "-O2 -D INDEX=unsigned"})),
            "buffer x, scalar4 a, scalar4 n");
}

TEST(DeclaredSignature, MacrosHalCannotReadGiveNone) {
  const char* code = "KERNEL void f(GLOBAL float* x, T a) {}";
  EXPECT_EQ(summary(read(code, "f")), "nullopt");  // T unknown: a header, a -D it cannot see
  EXPECT_EQ(summary(read(code, "f", KernelLanguage::portable, {.defines = {"T"}})), "nullopt");
  EXPECT_EQ(summary(read(std::string("#define T(x) x\n") + code, "f")), "nullopt");
  EXPECT_EQ(summary(read(std::string("#define T float\n#undef T\n#define T double\n") + code, "f")),
            "nullopt");
  EXPECT_EQ(summary(read(std::string("#ifdef W\n#define T double\n#else\n#define T float\n"
                                     "#endif\n") +
                             code,
                         "f")),
            "nullopt");
  EXPECT_EQ(summary(read(code, "f", KernelLanguage::portable, {.flags = "-UT"})), "nullopt");
  // Macros that make whole parameters, or a kernel's whole definition.
  EXPECT_EQ(summary(read("#define ARGS float a, int n\nKERNEL void f(ARGS) {}", "f")), "nullopt");
  EXPECT_EQ(summary(read("#define DEFINE(name) KERNEL void name(int n) {}\nDEFINE(f)", "f")),
            "nullopt");
}

TEST(DeclaredSignature, TypedefsOfScalarsAreFollowed) {
  EXPECT_EQ(summary(read(R"(
    typedef unsigned int index_t;
    typedef index_t count_t;
    KERNEL void f(count_t n, GLOBAL index_t* out) {})",
                         "f")),
            "scalar4 n, buffer out");
  // Sizes that differ by #if branch: a scalar of a size the signature does not fix.
  EXPECT_EQ(summary(read(R"(
    #ifdef OUT_F64
    typedef double real;
    #else
    typedef float real;
    #endif
    KERNEL void f(GLOBAL real* dst, real low) {})",
                         "f")),
            "buffer dst, scalar0 low");
}

// The sizes OpenCL's reflection leaves open (it names a typedef's type as the source spells
// it): each type alone, so that a parameter hal cannot read (a vector) spoils no other.
TEST(DeclaredTypeSizes, TypedefsMacrosAndBuiltinsEachAlone) {
  const KernelSource source{"f", R"(
    typedef unsigned int index_t;
    typedef index_t count_t;
    #define REAL float
    typedef REAL real;
    typedef GLOBAL float* ptr;
    typedef b a;
    typedef a b;
    KERNEL void f(float4 v, real r) {})"};
  const std::vector<std::string> types{"count_t", "real", "ulong", "unsigned short",
                                       "float4",  "ptr",  "a",     "float*"};
  EXPECT_EQ(declared_type_sizes(source, {}, types), (std::vector<size_t>{4, 4, 8, 2, 0, 0, 0, 0}));
  EXPECT_EQ(declared_type_sizes({"f", source.code, KernelLanguage::native}, {}, types),
            std::vector<size_t>(types.size(), 0));
}

TEST(DeclaredSignature, MacrosAndTypedefsThatNameThemselvesGiveNone) {
  EXPECT_EQ(summary(read("#define T T T\nKERNEL void f(T a) {}", "f")), "nullopt");
  EXPECT_EQ(summary(read("typedef b a;\ntypedef a b;\nKERNEL void f(a n) {}", "f")), "nullopt");
  EXPECT_EQ(
      summary(read("__kernel __attribute__((x) void f(int n) {}", "f", KernelLanguage::opencl_c)),
      "nullopt");  // an attribute's parentheses that never close
}

TEST(DeclaredSignature, TypedefsThatHidePointersOrStructsGiveNone) {
  EXPECT_EQ(summary(read("typedef GLOBAL float* ptr;\nKERNEL void f(ptr x) {}", "f")), "nullopt");
  EXPECT_EQ(summary(read("typedef struct { float a; } pair;\nKERNEL void f(pair p) {}", "f")),
            "nullopt");
  EXPECT_EQ(summary(read("typedef float vec[4];\nKERNEL void f(vec v) {}", "f")), "nullopt");
}

TEST(DeclaredSignature, ParametersOfKindsItDoesNotKnowGiveNone) {
  for (const char* params :
       {"float a[4]", "GLOBAL float** x", "float* x", "struct s v", "GLOBAL float x",
        "SHARED float x", "GLOBAL SHARED float* x", "int& n", "long double d", "float4 v"})
    EXPECT_EQ(summary(read(std::string("KERNEL void f(") + params + ") {}", "f")), "nullopt")
        << params;
}

TEST(DeclaredSignature, OpenClC) {
  EXPECT_EQ(summary(read(R"(
    __kernel __attribute__((reqd_work_group_size(64, 1, 1)))
    void saxpy(float a, __global const float* restrict x, global float* y,
               __constant int* table, __local float* scratch, local int* more, __private uint n,
               ulong big) {})",
                         "saxpy", KernelLanguage::opencl_c)),
            "scalar4 a, buffer x, buffer y, buffer table, local scratch, local more, scalar4 n, "
            "scalar8 big");
  // A pointer in OpenCL C needs an address space; an image is no type it knows.
  EXPECT_EQ(summary(read("kernel void f(float* x) {}", "f", KernelLanguage::opencl_c)), "nullopt");
  EXPECT_EQ(
      summary(read("kernel void f(__read_only image2d_t image) {}", "f", KernelLanguage::opencl_c)),
      "nullopt");
  // The portable dialect's words mean nothing in OpenCL C.
  EXPECT_EQ(summary(read("KERNEL void f(GLOBAL float* x) {}", "f", KernelLanguage::opencl_c)),
            "nullopt");
}

TEST(DeclaredSignature, CudaCpp) {
  EXPECT_EQ(summary(read(R"(
    extern "C" __global__ void __launch_bounds__(256)
    scale(float* __restrict__ x, const float* y, float a, unsigned long long n) {})",
                         "scale", KernelLanguage::cuda)),
            "buffer x, buffer y, scalar4 a, scalar8 n");
  EXPECT_EQ(summary(read("template <class T> __global__ void f(T* x, T a) {}", "f",
                         KernelLanguage::cuda)),
            "nullopt");
  EXPECT_EQ(summary(read("__global__ void f(const float& a) {}", "f", KernelLanguage::cuda)),
            "nullopt");
}

TEST(DeclaredSignature, NativeSourcesHaveNone) {
  EXPECT_EQ(summary(read("kernel saxpy", "saxpy", KernelLanguage::native)), "nullopt");
}

TEST(DeclaredSignature, HalsOwnKernelsAreRead) {
  // As src/tensor's strided copy declares itself (ELEMENT comes from a define).
  EXPECT_EQ(summary(read(R"(
    #ifndef ELEMENT
    #error ELEMENT must be defined (uchar, ushort, uint or ulong)
    #endif
    KERNEL void strided_copy(GLOBAL ELEMENT* dst, GLOBAL const ELEMENT* src, ulong offset,
                             ulong n) {})",
                         "strided_copy", KernelLanguage::portable, {.defines = {"ELEMENT=uint"}})),
            "buffer dst, buffer src, scalar8 offset, scalar8 n");
}

TEST(ArgumentMismatch, CountKindAndScalarSize) {
  const std::vector<KernelParam> params{
      {Kind::scalar, 4, "a", "float"},
      {Kind::buffer, 0, "x", "__global const float*"},
      {Kind::local_memory, 0, "scratch", "__local float*"},
      {Kind::scalar, 0, "r", "real"},
  };
  const std::vector<KernelArg> good{2.0f, Buffer(), KernelArg::local_memory(64), 1.0};
  EXPECT_EQ(argument_mismatch(params, good), std::nullopt);  // any size for `r`

  const std::vector<KernelArg> three{2.0f, Buffer(), KernelArg::local_memory(64)};
  EXPECT_EQ(argument_mismatch(params, three),
            "the kernel takes 4 arguments, 3 given; its signature is (float a, __global const "
            "float* x, __local float* scratch, real r)");
  const std::vector<KernelArg> scalar_for_buffer{2.0f, uint64_t{12345678},
                                                 KernelArg::local_memory(64), 1.0f};
  EXPECT_EQ(argument_mismatch(params, scalar_for_buffer),
            "argument 1 (x): the kernel takes a buffer (__global const float*), given an 8-byte "
            "scalar");
  const std::vector<KernelArg> double_for_float{2.0, Buffer(), KernelArg::local_memory(64), 1.0f};
  EXPECT_EQ(argument_mismatch(params, double_for_float),
            "argument 0 (a): the kernel takes a 4-byte scalar (float), given an 8-byte scalar");
  const std::vector<KernelArg> buffer_for_local{2.0f, Buffer(), Buffer(), 1.0f};
  EXPECT_EQ(argument_mismatch(params, buffer_for_local),
            "argument 2 (scratch): the kernel takes local memory (__local float*), given a buffer");
  const std::vector<KernelArg> local_for_scalar{2.0f, Buffer(), KernelArg::local_memory(64),
                                                KernelArg::local_memory(256)};
  EXPECT_EQ(argument_mismatch(params, local_for_scalar),
            "argument 3 (r): the kernel takes a scalar (real), given 256 bytes of local memory");
  // Drivers refuse 0 bytes of local memory at enqueue (CL_INVALID_ARG_SIZE).
  const std::vector<KernelArg> no_local{2.0f, Buffer(), KernelArg::local_memory(0), 1.0f};
  EXPECT_EQ(argument_mismatch(params, no_local),
            "argument 2 (scratch): the kernel takes local memory (__local float*), given 0 bytes "
            "of local memory (local memory needs at least 1 byte)");
}

}  // namespace
}  // namespace hal::detail
