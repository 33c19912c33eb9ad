#include "hal/error.hpp"

#include <gtest/gtest.h>

namespace hal {
namespace {

TEST(Error, CodesKeepTheirValuesForTheCAbi) {
  EXPECT_EQ(static_cast<int>(ErrorCode::Ok), 0);
  EXPECT_EQ(static_cast<int>(ErrorCode::InvalidArgument), 1);
  EXPECT_EQ(static_cast<int>(ErrorCode::OutOfMemory), 2);
  EXPECT_EQ(static_cast<int>(ErrorCode::Unsupported), 3);
  EXPECT_EQ(static_cast<int>(ErrorCode::CompileFailed), 4);
  EXPECT_EQ(static_cast<int>(ErrorCode::DeviceLost), 5);
  EXPECT_EQ(static_cast<int>(ErrorCode::BackendUnavailable), 6);
  EXPECT_EQ(static_cast<int>(ErrorCode::PluginAbiMismatch), 7);
  EXPECT_EQ(static_cast<int>(ErrorCode::NotFound), 8);
  EXPECT_EQ(static_cast<int>(ErrorCode::InvalidState), 9);
  EXPECT_EQ(static_cast<int>(ErrorCode::OutOfRange), 10);
  EXPECT_EQ(static_cast<int>(ErrorCode::Timeout), 11);
  EXPECT_EQ(static_cast<int>(ErrorCode::Internal), 12);
  EXPECT_EQ(static_cast<int>(ErrorCode::AsyncFailure), 13);
}

TEST(Error, CarriesCodeNativeCodeAndMessage) {
  const Error error(ErrorCode::OutOfMemory, "allocate on cuda:0: 8 GiB", -2);
  EXPECT_EQ(error.code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(error.native_code(), -2);
  EXPECT_EQ(error.message(), "allocate on cuda:0: 8 GiB");
  EXPECT_STREQ(error.what(), "hal: OutOfMemory: allocate on cuda:0: 8 GiB");
}

TEST(Error, IsARuntimeError) {
  try {
    throw Error(ErrorCode::NotFound, "no device 'x'");
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "hal: NotFound: no device 'x'");
  }
}

TEST(Error, EveryCodeHasAName) {
  for (int code = 0; code <= 13; ++code)
    EXPECT_NE(to_string(static_cast<ErrorCode>(code)), "Unknown") << code;
  EXPECT_EQ(to_string(static_cast<ErrorCode>(999)), "Unknown");
}

}  // namespace
}  // namespace hal
