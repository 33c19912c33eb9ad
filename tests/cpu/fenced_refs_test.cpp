// async::FencedRefs, the reference keeping of the OpenCL and CUDA streams, against fences whose
// completion the test decides.
#include "backends/async/fenced_refs.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>

namespace hal::async {
namespace {

// Fences are numbers; `state[f]` is nullopt while f is pending, then its status (0: success).
struct FakeFences {
  using Fence = int;
  using Status = int;
  static constexpr int kSuccess = 0;
  std::map<int, std::optional<int>>* state;
  std::vector<int>* destroyed;
  std::optional<int> poll(int fence) const { return state->at(fence); }
  void destroy(int fence) const { destroyed->push_back(fence); }
};

class FencedRefsTest : public ::testing::Test {
 protected:
  using Refs = FencedRefs<FakeFences>;
  // Adds one command holding a fresh object; returns a watch on it.
  std::weak_ptr<const void> add_one() {
    auto object = std::make_shared<int>(0);
    std::vector<Refs::Ref> held{object};
    refs.add(held);
    return object;
  }
  void close(int fence) {
    state[fence] = std::nullopt;
    refs.close(fence);
  }
  std::map<int, std::optional<int>> state;
  std::vector<int> destroyed;
  Refs refs{FakeFences{&state, &destroyed}};
};

TEST_F(FencedRefsTest, ReferencesLastUntilTheirFenceCompletes) {
  const auto a = add_one(), b = add_one();
  EXPECT_TRUE(refs.has_open_commands());
  close(1);
  EXPECT_FALSE(refs.has_open_commands());
  Refs::Batches done;
  refs.take_completed(done);
  EXPECT_TRUE(done.empty());
  EXPECT_FALSE(refs.idle());
  EXPECT_FALSE(a.expired());

  state[1] = 0;
  refs.take_completed(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(refs.idle());
  EXPECT_FALSE(a.expired()) << "held until released, outside the stream's lock";
  refs.release(done);
  EXPECT_TRUE(a.expired());
  EXPECT_TRUE(b.expired());
  EXPECT_EQ(destroyed, std::vector<int>{1});
  EXPECT_TRUE(done.empty());
}

TEST_F(FencedRefsTest, BatchesCompleteOldestFirst) {
  const auto first = add_one();
  close(1);
  const auto second = add_one();
  close(2);
  state[2] = 0;  // a later fence done before an earlier one: an in-order stream never does that,
                 // and nothing may be dropped past a pending fence
  Refs::Batches done;
  refs.take_completed(done);
  EXPECT_TRUE(done.empty());
  state[1] = 0;
  refs.take_completed(done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].fence, 1);
  EXPECT_EQ(done[1].fence, 2);
  refs.release(done);
  EXPECT_TRUE(first.expired() && second.expired());
}

TEST_F(FencedRefsTest, AFullBatchAsksForAFence) {
  for (size_t i = 1; i < Refs::kRefsPerFence; ++i) {
    auto object = std::make_shared<int>(0);
    std::vector<Refs::Ref> held{object};
    ASSERT_FALSE(refs.add(held)) << i;
    EXPECT_TRUE(held.empty() || !held.front()) << "the references are taken";
  }
  auto object = std::make_shared<int>(0);
  std::vector<Refs::Ref> last{object, object};
  EXPECT_TRUE(refs.add(last));
}

TEST_F(FencedRefsTest, CommandsWithoutReferencesStillNeedAFence) {
  EXPECT_FALSE(refs.has_open_commands());
  refs.add_command();
  EXPECT_TRUE(refs.has_open_commands());
  close(7);
  EXPECT_FALSE(refs.has_open_commands());
}

TEST_F(FencedRefsTest, TheFirstFailureIsKeptUntilTaken) {
  add_one();
  close(1);
  add_one();
  close(2);
  add_one();
  close(3);
  state[1] = 0;
  state[2] = -5;
  state[3] = -9;
  Refs::Batches done;
  refs.take_completed(done);
  EXPECT_EQ(done.size(), 3u);
  refs.release(done);
  EXPECT_EQ(refs.take_failure(), -5);
  EXPECT_EQ(refs.take_failure(), 0) << "taken once";
}

TEST_F(FencedRefsTest, SynchronizeTakesEverythingAndFindsFailures) {
  const auto closed = add_one();
  close(1);
  const auto open = add_one();
  Refs::Batches batches;
  std::vector<Refs::Ref> open_refs;
  refs.take_all(batches, open_refs);
  EXPECT_TRUE(refs.idle());
  EXPECT_FALSE(refs.has_open_commands());
  EXPECT_EQ(batches.size(), 1u);
  EXPECT_EQ(open_refs.size(), 1u);
  state[1] = -3;  // the stream has been synchronised: every fence has an outcome
  EXPECT_EQ(refs.first_failure(batches), -3);
  refs.release(batches);
  open_refs.clear();
  EXPECT_TRUE(closed.expired() && open.expired());
  EXPECT_EQ(destroyed, std::vector<int>{1});
}

// One at a time (hold): an object among the open batch's latest kRecent references is not
// taken again; one further back, or in a closed batch, is.
TEST_F(FencedRefsTest, HoldTakesAnObjectOncePerBatchWithinItsWindow) {
  auto kernel = std::make_shared<int>(1);
  for (int i = 0; i < 10; ++i) {
    refs.hold(kernel);
    EXPECT_FALSE(refs.end_command());
  }
  EXPECT_EQ(kernel.use_count(), 2) << "one reference for ten commands of one open batch";
  std::vector<std::shared_ptr<int>> others;
  for (size_t i = 0; i < Refs::kRecent; ++i) {
    others.push_back(std::make_shared<int>(0));
    refs.hold(others.back());
    refs.end_command();
  }
  refs.hold(kernel);  // now kRecent references back: taken again
  refs.end_command();
  EXPECT_EQ(kernel.use_count(), 3);
  close(1);
  refs.hold(kernel);  // a new batch holds it again
  refs.end_command();
  EXPECT_EQ(kernel.use_count(), 4);
}

TEST_F(FencedRefsTest, HoldComparesOwnersNotAddresses) {
  auto owner = std::make_shared<std::pair<int, int>>(1, 2);
  refs.hold(owner);
  refs.end_command();
  // The same address under another owner keeps only that owner alive.
  auto other = std::make_shared<std::pair<int, int>>(3, 4);
  std::shared_ptr<std::pair<int, int>> alias(other, owner.get());  // other's owner, owner's address
  refs.hold(alias);
  refs.end_command();
  EXPECT_EQ(other.use_count(), 3) << "an alias of another owner was mistaken for the first";
}

// A loop over the same objects never fills a batch by references; it is closed by its commands
// instead, so that what it held before the loop and the batches in flight are still released.
TEST_F(FencedRefsTest, ALoopOverHeldObjectsStillClosesItsBatches) {
  const std::weak_ptr<const void> dropped = [&] {
    auto temporary = std::make_shared<int>(7);
    refs.hold(temporary);
    refs.end_command();
    return std::weak_ptr<const void>(temporary);
  }();
  auto kernel = std::make_shared<int>(1);
  size_t commands = 1;
  bool full = false;
  while (!full && commands < 10 * Refs::kRefsPerFence) {
    refs.hold(kernel);
    full = refs.end_command();
    ++commands;
  }
  EXPECT_TRUE(full);
  EXPECT_EQ(commands, Refs::kRefsPerFence);
  close(1);
  state[1] = 0;
  Refs::Batches done;
  refs.take_completed(done);
  refs.release(done);
  EXPECT_TRUE(dropped.expired());
}

// Reusable fences (CUevents): passed ones come back as spares, at most kSpares; pending and
// failed ones never do; the destructor destroys what is left.
struct ReusableFences : FakeFences {
  static constexpr bool kReusable = true;
};

TEST(FencedRefsSpares, PassedFencesAreReusedFailedOnesDestroyed) {
  std::map<int, std::optional<int>> state;
  std::vector<int> destroyed;
  {
    FencedRefs<ReusableFences> refs{ReusableFences{{&state, &destroyed}}};
    EXPECT_EQ(refs.take_spare(), 0) << "no spare yet: Fence{}";
    for (int fence = 1; fence <= 7; ++fence) {
      refs.add_command();
      state[fence] = std::nullopt;
      refs.close(fence);
    }
    state[1] = 0;
    state[2] = 5;                                               // failed
    for (int fence = 3; fence <= 6; ++fence) state[fence] = 0;  // 7 still pending
    FencedRefs<ReusableFences>::Batches done;
    refs.take_completed(done);
    EXPECT_EQ(done.size(), 6u);
    refs.release(done);
    // 1, 3, 4, 5 kept (four spares), 2 (failed) and 6 (beyond the spares) destroyed.
    EXPECT_EQ(destroyed, (std::vector<int>{2, 6}));
    EXPECT_EQ(refs.take_failure(), 5);
    EXPECT_EQ(refs.take_spare(), 5);
    destroyed.clear();
  }
  EXPECT_EQ(destroyed, (std::vector<int>{1, 3, 4})) << "the destructor destroys the spares";
}

}  // namespace
}  // namespace hal::async
