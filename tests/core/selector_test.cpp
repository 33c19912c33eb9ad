#include "hal/visible_devices.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace hal {
namespace {

DeviceInfo device(std::string id, DeviceKind kind, std::string uuid) {
  DeviceInfo info;
  info.id = std::move(id);
  info.kind = kind;
  info.uuid = std::move(uuid);
  return info;
}

const DeviceInfo kCpu0 = device("cpu:0", DeviceKind::cpu, "11111111-2222-8333-8444-555555555555");
const DeviceInfo kCuda0 = device("cuda:0", DeviceKind::gpu, "abcdef01-0000-8000-8000-000000000000");
const DeviceInfo kCuda1 = device("cuda:1", DeviceKind::gpu, "abcdef02-0000-8000-8000-000000000000");
const DeviceInfo kOpenclCpu =
    device("opencl:0", DeviceKind::cpu, "99999999-0000-8000-8000-000000000000");
const DeviceInfo kOpenclGpu =
    device("opencl:1", DeviceKind::gpu, "88888888-0000-8000-8000-000000000000");
const DeviceInfo kSim3 =
    device("sim:3", DeviceKind::accelerator, "77777777-0000-8000-8000-000000000000");

std::vector<std::string> visible(const DeviceSelector& selector) {
  std::vector<std::string> ids;
  for (const DeviceInfo* info : {&kCpu0, &kCuda0, &kCuda1, &kOpenclCpu, &kOpenclGpu, &kSim3})
    if (selector.matches(*info)) ids.push_back(info->id);
  return ids;
}

using Ids = std::vector<std::string>;

TEST(Selector, DefaultShowsEverything) { EXPECT_EQ(visible(DeviceSelector()).size(), 6u); }

TEST(Selector, SelectsByBackendIndexKindAndUuid) {
  EXPECT_EQ(visible(DeviceSelector::parse("cuda:*")), (Ids{"cuda:0", "cuda:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("cuda:1")), (Ids{"cuda:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("cuda:0,1")), (Ids{"cuda:0", "cuda:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("opencl:gpu")), (Ids{"opencl:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("*:cpu")), (Ids{"cpu:0", "opencl:0"}));
  EXPECT_EQ(visible(DeviceSelector::parse("*:accelerator")), (Ids{"sim:3"}));
  EXPECT_EQ(visible(DeviceSelector::parse("cuda:abcdef02")), (Ids{"cuda:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("*:ABCDEF01-0000")), (Ids{"cuda:0"}));
}

TEST(Selector, CombinesTermsAndDiscards) {
  EXPECT_EQ(visible(DeviceSelector::parse("cuda:*;opencl:gpu;!sim:1")),
            (Ids{"cuda:0", "cuda:1", "opencl:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("!sim:3")),
            (Ids{"cpu:0", "cuda:0", "cuda:1", "opencl:0", "opencl:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("*:*;!cuda:0;!opencl:cpu")),
            (Ids{"cpu:0", "cuda:1", "opencl:1", "sim:3"}));
  EXPECT_TRUE(visible(DeviceSelector::parse("cuda:0;!cuda:*")).empty());
}

// The registry leaves a backend unprobed when may_show_backend says no device of it can match:
// that must never hide a device the selector would show.
TEST(Selector, SaysWhichBackendsCannotShowAnyDevice) {
  const std::vector<std::string> backends = {"cpu", "cuda", "opencl", "sim", "vulkan"};
  const auto shown_backends = [&](const char* text) {
    const DeviceSelector selector = text ? DeviceSelector::parse(text) : DeviceSelector();
    Ids may;
    for (const std::string& backend : backends)
      if (selector.may_show_backend(backend)) may.push_back(backend);
    for (const DeviceInfo* info : {&kCpu0, &kCuda0, &kCuda1, &kOpenclCpu, &kOpenclGpu, &kSim3})
      if (selector.matches(*info)) {
        EXPECT_TRUE(selector.may_show_backend(info->backend()))
            << (text ? text : "(none)") << " shows " << info->id;
      }
    return may;
  };
  EXPECT_EQ(shown_backends(nullptr), backends);
  EXPECT_EQ(shown_backends("cpu:*"), (Ids{"cpu"}));
  EXPECT_EQ(shown_backends("CUDA:1;opencl:gpu"), (Ids{"cuda", "opencl"}));
  EXPECT_EQ(shown_backends("*:gpu"), backends);
  EXPECT_EQ(shown_backends("!opencl:*;!vulkan:*"), (Ids{"cpu", "cuda", "sim"}));
  EXPECT_EQ(shown_backends("!opencl:1"), backends);  // opencl:0 may still show
  EXPECT_EQ(shown_backends("cuda:0;!cuda:*"), (Ids{}));
  EXPECT_EQ(shown_backends("*:*;!*:*"), (Ids{}));
  EXPECT_EQ(shown_backends("sim:3;!*:gpu"), (Ids{"sim"}));
}

TEST(Selector, IgnoresCaseAndSpaces) {
  EXPECT_EQ(visible(DeviceSelector::parse(" CUDA : 0 , 1 ; ! Cuda:1 ")), (Ids{"cuda:0"}));
  EXPECT_EQ(visible(DeviceSelector::parse("OpenCL:GPU")), (Ids{"opencl:1"}));
  EXPECT_EQ(visible(DeviceSelector::parse("cuda:ABCDEF01")), (Ids{"cuda:0"}));
}

TEST(Selector, MalformedSelectorsQuoteTheTextAndSayWhatWasExpected) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"", "empty"}, Case{"   ", "empty"}, Case{"cuda", "has no ':'"},
                        Case{"cuda:0;;cpu:*", "empty term"}, Case{"cuda:x", "device 'x'"},
                        Case{"cuda:0,", "device ''"}, Case{"cu-da:0", "backend 'cu-da'"},
                        Case{":0", "backend ''"}, Case{"cuda:abc", "device 'abc'"},
                        Case{"cuda:12345678901", "too large"}, Case{"cuda:gpu;", "empty term"},
                        // Digits with dashes look like a range, not a UUID prefix.
                        Case{"cpu:10-13", "not all decimal"}, Case{"cpu:1111-2222", "device"}}) {
    test::expect_error([&] { DeviceSelector::parse(c.text); }, ErrorCode::InvalidArgument,
                       {std::string(c.text), c.says, "expected"});
  }
}

// An index is bounded by its value, not by how many digits spell it.
TEST(Selector, IndexesAreBoundedByTheirValueNotTheirDigits) {
  EXPECT_EQ(visible(DeviceSelector::parse("sim:0000000003")), (Ids{"sim:3"}));
  EXPECT_EQ(visible(DeviceSelector::parse("cuda:00000000000000000001")), (Ids{"cuda:1"}));
  EXPECT_TRUE(visible(DeviceSelector::parse("cuda:4294967295")).empty());
  test::expect_error([] { DeviceSelector::parse("cuda:4294967296"); }, ErrorCode::InvalidArgument,
                     {"device index '4294967296' is too large", "at most 4294967295"});
}

TEST(Selector, UnknownBackendIsAnError) {
  const DeviceSelector selector = DeviceSelector::parse("cpu:*;cdua:0");
  test::expect_error(
      [&] {
        selector.check_backends({"cpu", "cuda"});
      },
      ErrorCode::InvalidArgument, {"cpu:*;cdua:0", "unknown backend 'cdua'", "cpu, cuda"});
  EXPECT_NO_THROW(DeviceSelector::parse("*:gpu;CUDA:0").check_backends({"cpu", "cuda"}));
}

}  // namespace
}  // namespace hal
