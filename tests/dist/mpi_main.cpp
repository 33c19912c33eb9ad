// main() of the tests that mpirun starts, one process per rank: MPI comes up through hal's world
// communicator; rank 0 prints GoogleTest's usual report, the other ranks only their failures,
// each line marked with its rank. Every rank exits with its own status, and mpirun with the
// worst. Where the world cannot be made (MpiFaults.ARankThatDoesNotCreateTheWorld makes it
// time out), main says so and runs the tests all the same: each call of
// Communicator::world() throws that error again, for the tests to check.
#include <gtest/gtest.h>

#include <cstdio>

#include "hal/dist.hpp"
#include "hal/error.hpp"

namespace {

class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_,
                 result.file_name() ? result.file_name() : "", result.line_number(),
                 result.summary());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  try {
    rank = hal::dist::Communicator::world().rank();
  } catch (const hal::Error& e) {
    rank = hal::dist::launch_info().rank;  // the launcher's word for it
    std::fprintf(stderr, "[rank %d] Communicator::world(): %s\n", rank, e.what());
  }
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly(rank));
  }
  return RUN_ALL_TESTS();
}
