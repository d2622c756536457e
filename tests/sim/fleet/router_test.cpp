// Routers: closed forms for the deterministic ones, and their choice on hand-made views.
#include "sim/fleet/router.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sim/fleet/fleet.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

std::unique_ptr<Router> router(const std::string& section) {
  const nlohmann::json j = nlohmann::json::parse(section);
  JsonSection s(j, "test", "fleet.router");
  return router_policies().parse(s, "round_robin")->make_router(1);
}

std::vector<ReplicaView> views(std::vector<int64_t> live, std::vector<int64_t> free) {
  std::vector<ReplicaView> v(live.size());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].live = live[i];
    v[i].free_blocks = free[i];
    v[i].pool_blocks = 100;
  }
  return v;
}

// The counts a fleet's run gave its replicas, placed calls per replica.
std::vector<int64_t> placed(const Scenario& s, const std::string& fleet) {
  nlohmann::json j = to_json(s);
  j["fleet"] = nlohmann::json::parse(fleet);
  const Scenario f = parse_scenario(j, "test");
  std::vector<int64_t> out;
  for (const auto& o : Fleet(f).run().replicas) out.push_back(o.placed());
  return out;
}

TEST(Router, RoundRobinSpreadsNCallsToWithinOne) {
  for (int64_t n : {1, 7, 20, 101}) {
    for (int64_t r : {1, 3, 8}) {
      const auto counts = placed(testing::moshi(n, "windowed", {"horizon_s=2"}),
                                 R"({"groups": [{"count": )" + std::to_string(r) +
                                     R"(}], "router": {"type": "round_robin"}})");
      ASSERT_EQ(counts.size(), static_cast<size_t>(r));
      for (int64_t c : counts) {
        EXPECT_TRUE(c == n / r || c == (n + r - 1) / r) << n << " calls, " << r << " replicas";
      }
      // The first n mod r replicas take the extra call: the turn starts at replica 0.
      for (int64_t i = 0; i < r; ++i) EXPECT_EQ(counts[i], n / r + (i < n % r ? 1 : 0));
    }
  }
}

// Equal calls that all stay (longer than the horizon): each goes where the fewest are, so the
// counts never differ by more than one, whatever the arrival times.
TEST(Router, LeastSessionsKeepsEqualCallsWithinOne) {
  const Scenario s = testing::moshi(
      0, "windowed",
      {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":30,\"max_sessions\":157}",
       "workload.duration={\"type\":\"fixed\",\"seconds\":100}", "horizon_s=20"});
  const auto counts = placed(s, R"({"groups": [{"count": 4}, {"name": "b", "count": 3}],
                    "router": {"type": "least_sessions"}})");
  const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  EXPECT_LE(*hi - *lo, 1);
  int64_t sum = 0;
  for (int64_t c : counts) sum += c;
  EXPECT_EQ(sum, 157);
}

TEST(Router, ChoosesByItsSignalLowestIndexOnTies) {
  auto v = views({4, 2, 2, 9}, {10, 30, 50, 50});
  EXPECT_EQ(router(R"({"type": "least_sessions"})")->choose(v), 1u);
  EXPECT_EQ(router(R"({"type": "most_free_blocks"})")->choose(v), 2u);
  v[0].latency_s = 0.03;
  v[1].latency_s = 0.02;
  v[2].latency_s = 0.05;
  v[3].latency_s = 0.02;
  EXPECT_EQ(router(R"({"type": "latency"})")->choose(v), 1u);  // 0.02 at 2 live before 9 live
  auto rr = router(R"({"type": "round_robin"})");
  for (size_t k = 0; k < 9; ++k) EXPECT_EQ(rr->choose(v), k % 4);
}

// Power of two choices over two replicas always compares both: it picks the better every time.
// Over more, its two draws are distinct and uniform: it never picks the worst replica, and each
// of the others is picked.
TEST(Router, PowerOfTwoPicksTheBetterOfTwoDistinctDraws) {
  auto two = views({5, 3}, {10, 20});
  for (const char* by : {"sessions", "free_blocks"}) {
    auto p = router(std::string(R"({"type": "p2c", "by": ")") + by + "\"}");
    for (int k = 0; k < 100; ++k) EXPECT_EQ(p->choose(two), 1u) << by;
  }
  auto four = views({1, 2, 3, 4}, {0, 0, 0, 0});
  auto p = router(R"({"type": "p2c", "by": "sessions"})");
  std::vector<int> hits(4);
  for (int k = 0; k < 6000; ++k) ++hits[p->choose(four)];
  EXPECT_EQ(hits[3], 0);
  // P(pick i) = P(i drawn and every other draw worse): 1/2, 1/3, 1/6 for the three best.
  EXPECT_NEAR(hits[0] / 6000.0, 0.5, 0.03);
  EXPECT_NEAR(hits[1] / 6000.0, 1.0 / 3, 0.03);
  EXPECT_NEAR(hits[2] / 6000.0, 1.0 / 6, 0.03);
}

}  // namespace
}  // namespace metronome
