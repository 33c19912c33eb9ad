// The balancer's policies on given loads, and the metrics' Prometheus text.
#include <gtest/gtest.h>

#include "serve/balancer.hpp"
#include "serve/metrics.hpp"

namespace hal::serve {
namespace {

InstanceLoad load(double work_ahead_s, double batch_s, int64_t requests = 0, int64_t batches = 0) {
  InstanceLoad l;
  l.work_ahead_s = work_ahead_s;
  l.batch_s = batch_s;
  l.requests = requests;
  l.batches = batches;
  return l;
}

TEST(Balancer, PredictedPicksTheEarliestCompletion) {
  size_t next = 0;
  // A slow idle device (4 ms) against a fast one with 1 ms queued and a 1 ms batch.
  std::vector<InstanceLoad> loads = {load(0, 0.004), load(0.001, 0.001)};
  Choice c = choose_instance(Balancer::predicted, loads, next);
  EXPECT_EQ(c.kind, Choice::run);
  EXPECT_EQ(c.instance, 1u);
  // With 5 ms queued on the fast one, the slow one finishes first.
  loads[1].work_ahead_s = 0.005;
  c = choose_instance(Balancer::predicted, loads, next);
  EXPECT_EQ(c.instance, 0u);
}

TEST(Balancer, PredictedQueuesOnAFastInstanceUntilASlowOneWouldFinishFirst) {
  size_t next = 0;
  // The fast one holds its 2 batches (8 ms of work); the slow one takes 40 ms for the batch.
  std::vector<InstanceLoad> loads = {load(0, 0.040), load(0.008, 0.010, 4, 2)};
  Choice c = choose_instance(Balancer::predicted, loads, next);
  EXPECT_EQ(c.kind, Choice::run);
  EXPECT_EQ(c.instance, 1u);
  // With 35 ms queued the slow one finishes first (40 < 45).
  loads[1].work_ahead_s = 0.035;
  loads[1].batches = 5;
  c = choose_instance(Balancer::predicted, loads, next);
  EXPECT_EQ(c.instance, 0u);
  // The fast one past the horizon is passed over for the slow one with room, though the slow
  // one finishes later than the fast one would (it is not waited for).
  loads[0].work_ahead_s = 0.100;
  loads[0].batches = 1;
  loads[1].work_ahead_s = 0.045;
  c = choose_instance(Balancer::predicted, loads, next);
  EXPECT_EQ(c.kind, Choice::run);
  EXPECT_EQ(c.instance, 0u);
  // Both full: wait for the one with the least work ahead.
  loads[0].batches = 2;
  c = choose_instance(Balancer::predicted, loads, next);
  EXPECT_EQ(c.kind, Choice::wait);
  EXPECT_EQ(c.instance, 1u);
}

TEST(Balancer, RoundRobinTakesEachInTurnAndWaitsForAFullOne) {
  size_t next = 0;
  std::vector<InstanceLoad> loads = {load(0, 1), load(0, 1), load(0, 1)};
  std::vector<size_t> order;
  for (int i = 0; i < 4; ++i)
    order.push_back(choose_instance(Balancer::round_robin, loads, next).instance);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 0}));
  loads[1].batches = loads[1].max_batches;  // full: round-robin waits for it rather than skip it
  const Choice c = choose_instance(Balancer::round_robin, loads, next);
  EXPECT_EQ(c.kind, Choice::wait);
  EXPECT_EQ(c.instance, 1u);
  EXPECT_EQ(next, 1u);  // still its turn
}

TEST(Balancer, LeastOutstandingPicksTheFewestRequests) {
  size_t next = 0;
  std::vector<InstanceLoad> loads = {load(0, 1, 5), load(0, 9, 2), load(0, 1, 3)};
  EXPECT_EQ(choose_instance(Balancer::least_outstanding, loads, next).instance, 1u);
}

// Requests and batches part ways (a batch holds one request or many): the instance with the
// fewest requests can have both its batch slots taken while another, with more requests in one
// batch, has a slot free. The batch runs there now instead of waiting on the full one.
TEST(Balancer, LeastOutstandingTakesAnInstanceWithRoomOverAFullOne) {
  size_t next = 0;
  // Instance 0: 2 requests in 2 batches (full); instance 1: 8 requests in 1 batch.
  std::vector<InstanceLoad> loads = {load(0, 1, 2, 2), load(0, 1, 8, 1)};
  ASSERT_EQ(loads[0].batches, loads[0].max_batches);
  Choice c = choose_instance(Balancer::least_outstanding, loads, next);
  EXPECT_EQ(c.kind, Choice::run);
  EXPECT_EQ(c.instance, 1u);
  EXPECT_EQ(next, 0u);  // the cursor moves past the instance chosen
  // Among the instances with room the fewest requests still win: 5 before 8.
  loads.push_back(load(0, 1, 5, 1));
  c = choose_instance(Balancer::least_outstanding, loads, next);
  EXPECT_EQ(c.kind, Choice::run);
  EXPECT_EQ(c.instance, 2u);
  // Every instance full: wait, on the one with the fewest requests; the cursor stays.
  for (InstanceLoad& l : loads) l.batches = l.max_batches;
  next = 1;
  c = choose_instance(Balancer::least_outstanding, loads, next);
  EXPECT_EQ(c.kind, Choice::wait);
  EXPECT_EQ(c.instance, 0u);
  EXPECT_EQ(next, 1u);
}

TEST(Balancer, UnhealthyInstancesAreSkippedAndNoneHealthyIsSaid) {
  size_t next = 0;
  std::vector<InstanceLoad> loads = {load(0, 0.001), load(0, 0.002)};
  loads[0].healthy = false;
  for (Balancer b : {Balancer::predicted, Balancer::round_robin, Balancer::least_outstanding})
    EXPECT_EQ(choose_instance(b, loads, next).instance, 1u) << to_string(b);
  loads[1].healthy = false;
  EXPECT_EQ(choose_instance(Balancer::predicted, loads, next).kind, Choice::none_healthy);
}

TEST(Balancer, NamesParseBack) {
  for (Balancer b : {Balancer::predicted, Balancer::round_robin, Balancer::least_outstanding})
    EXPECT_EQ(parse_balancer(to_string(b)), b);
  EXPECT_FALSE(parse_balancer("random").has_value());
}

TEST(ServeMetrics, HistogramsAreCumulativeInPrometheusText) {
  Metrics metrics;
  for (int rows : {1, 3, 3, 8, 100}) metrics.observe_batch("m", rows);
  metrics.count_request("m\"x", 200);
  const std::string text = metrics.render({{"hal_queue_depth", {"help", {{"model=\"m\"", 2}}}}});
  EXPECT_NE(text.find("# TYPE hal_batch_size histogram\n"), std::string::npos);
  EXPECT_NE(text.find("hal_batch_size_bucket{model=\"m\",le=\"1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("hal_batch_size_bucket{model=\"m\",le=\"4\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("hal_batch_size_bucket{model=\"m\",le=\"8\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("hal_batch_size_bucket{model=\"m\",le=\"+Inf\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("hal_batch_size_sum{model=\"m\"} 115\n"), std::string::npos);
  EXPECT_NE(text.find("hal_batch_size_count{model=\"m\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("hal_requests_total{model=\"m\\\"x\",code=\"200\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE hal_queue_depth gauge\nhal_queue_depth{model=\"m\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(metrics.batches("m"), (std::pair<uint64_t, double>{5, 115}));
}

}  // namespace
}  // namespace hal::serve
