// Gateway admission: each policy's rule on hand-made views, a token bucket's closed form through a
// fleet run, and the fleet's bad inputs (a clear error naming file and field).
#include "sim/fleet/gateway.h"

#include <gtest/gtest.h>

#include "base/config_error.h"
#include "sim/fleet/fleet.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

std::unique_ptr<Gateway> gateway(const std::string& section) {
  const nlohmann::json j = nlohmann::json::parse(section);
  JsonSection s(j, "test", "fleet.gateway");
  return gateway_policies().parse(s, "none")->make_gateway();
}

ReplicaView replica(int64_t queue, int64_t used) {
  ReplicaView v;
  v.queue_depth = queue;
  v.pool_blocks = 100;
  v.free_blocks = 100 - used;
  return v;
}

TEST(Gateway, ShedsOnQueueDepthOrKvUsageAboveItsThresholds) {
  auto shed = gateway(R"({"type": "shed"})");  // defaults: queue depth 5, KV usage 0.8
  EXPECT_EQ(shed->refuse(0, replica(5, 80), 0), nullptr);
  EXPECT_STREQ(shed->refuse(0, replica(6, 0), 0), "queue_depth");
  EXPECT_STREQ(shed->refuse(0, replica(0, 81), 0), "kv_usage");
  auto full = gateway(R"({"type": "shed", "max_kv_usage": 1})");
  EXPECT_EQ(full->refuse(0, replica(0, 100), 0), nullptr);  // usage never passes 1
}

TEST(Gateway, StaticCapsTheFleetsLiveSessions) {
  auto cap = gateway(R"({"type": "static", "cap": 3})");
  EXPECT_EQ(cap->refuse(0, replica(0, 0), 2), nullptr);
  EXPECT_STREQ(cap->refuse(0, replica(0, 0), 3), "fleet_cap");
}

// A bucket of `burst` that refills at `rate`: at one instant it lets burst calls through; over
// t seconds after, floor(rate x t) more (whole tokens).
TEST(Gateway, TokenBucketLetsBurstPlusRateTimesTimeThrough) {
  auto b = gateway(R"({"type": "token_bucket", "rate_per_s": 4, "burst": 3})");
  int through = 0;
  for (int k = 0; k < 10; ++k) through += b->refuse(0, replica(0, 0), 0) == nullptr;
  EXPECT_EQ(through, 3);
  for (int k = 0; k < 10; ++k) through += b->refuse(from_seconds(1.0), replica(0, 0), 0) == nullptr;
  EXPECT_EQ(through, 3 + 3);  // 4 tokens refilled, the bucket holds at most 3

  // Through a fleet: 500 callers at once, then nobody: burst are placed, the rest refused.
  nlohmann::json j = to_json(testing::moshi(500, "windowed", {"horizon_s=5"}));
  j["fleet"] = {{"groups", {{{"count", 3}}}},
                {"gateway", {{"type", "token_bucket"}, {"rate_per_s", 100}, {"burst", 40}}}};
  const FleetResult r = Fleet(parse_scenario(j, "test")).run();
  EXPECT_EQ(r.placed, 40);
  EXPECT_EQ(r.rejected.at("token_bucket"), 460);
}

void expect_error(const std::string& fleet, std::vector<std::string> fragments) {
  nlohmann::json j = to_json(testing::moshi(3, "windowed"));
  j["fleet"] = nlohmann::json::parse(fleet);
  try {
    parse_scenario(j, "fleet.json");
    FAIL() << "expected a ConfigError for " << fleet;
  } catch (const ConfigError& e) {
    for (const auto& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << f << "\"";
    }
  }
}

TEST(FleetConfig, BadInputNamesFileAndField) {
  expect_error(R"({"groups": [{"count": 1}], "router": {"type": "random"}})",
               {"fleet.json", "fleet.router.type", "round_robin"});
  expect_error(R"({"groups": [{"count": 0}]})", {"fleet.json", "fleet.groups[0].count"});
  expect_error(R"({"groups": []})", {"fleet.json", "fleet.groups", "non-empty"});
  expect_error(R"({"router": {"type": "round_robin"}})", {"fleet.json", "fleet.groups"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "shed", "max_kv_usage": 1.5}})",
               {"fleet.json", "fleet.gateway.max_kv_usage", "(0, 1]"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "shed", "max_kv_usage": 0}})",
               {"fleet.gateway.max_kv_usage", "(0, 1]"});
  expect_error(R"({"groups": [{"count": 2, "replicas": 3}]})", {"fleet.groups[0].replicas"});
  expect_error(R"({"groups": [{"count": 1}, {"count": 1, "engine": {"max_num_seqs": 0}}]})",
               {"fleet.groups[1]", "engine.max_num_seqs"});
  expect_error(R"({"groups": [{"name": "a", "count": 1}, {"name": "a", "count": 1}]})",
               {"fleet.groups[1].name"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "token_bucket"}})",
               {"fleet.gateway.rate_per_s"});
}

}  // namespace
}  // namespace metronome
