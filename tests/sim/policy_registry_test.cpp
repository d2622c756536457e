// docs/how_to_add_a_policy.md, followed from a test: a toy admission controller, a toy KV policy
// and a toy exhaustion policy, each one class and one registry line, run through the scenario
// loader, the resolved JSON and the engine like the shipped ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "base/config_error.h"
#include "sim/admission/admission_policy.h"
#include "sim/analysis/report.h"
#include "sim/config/scenario.h"
#include "sim/engine/engine.h"
#include "sim/exhaustion/exhaustion_policy.h"
#include "sim/exhaustion/preempt_recompute.h"
#include "sim/kv_policy/kv_policy.h"
#include "sim/kv_policy/windowed.h"
#include "test_scenarios.h"

namespace metronome {
namespace {

// admission.type = "toy_half": admits at most half of admission.toy_callers.
class ToyHalf final : public AdmissionController {
 public:
  explicit ToyHalf(int64_t callers) : cap_(callers / 2) {}
  int64_t cap() const override { return cap_; }

 private:
  int64_t cap_;
};

class ToyHalfPolicy final : public AdmissionPolicy {
 public:
  explicit ToyHalfPolicy(int64_t callers) : callers_(callers) {}
  std::string type() const override { return "toy_half"; }
  void write(nlohmann::json& section) const override { section["toy_callers"] = callers_; }
  std::unique_ptr<AdmissionController> make_controller(double) const override {
    return std::make_unique<ToyHalf>(callers_);
  }
  static std::shared_ptr<const AdmissionPolicy> parse(JsonSection& a) {
    return std::make_shared<ToyHalfPolicy>(a.integer("toy_callers", std::nullopt, 2, 1000));
  }

 private:
  int64_t callers_;
};

// kv_policy.type = "toy_tail": the last toy_keep tokens, no sinks (windowed with S = 0, by
// another name, but stated as a rule on positions and not as a kv::Window: the engines run it on
// their general paths, without the window's closed forms, and its runs must equal windowed's
// exactly).
class ToyTail final : public KvPolicy {
 public:
  explicit ToyTail(int64_t keep) : keep_(keep) {}
  std::string type() const override { return "toy_tail"; }
  void write(nlohmann::json& section) const override { section["toy_keep"] = keep_; }
  std::string describe() const override { return "toy tail " + std::to_string(keep_); }
  int64_t resident_from(int64_t ctx, const kv::FrameGrowth&) const override {
    return std::max<int64_t>(0, ctx - keep_);
  }
  bool bounded() const override { return true; }
  int64_t max_resident_tokens(const kv::FrameGrowth&) const override { return keep_; }
  int64_t max_step_blocks(const kv::FrameGrowth& g, kv::BlockSize bs) const override {
    return WindowedKv(keep_, 0).max_step_blocks(g, bs);
  }
  static std::shared_ptr<const KvPolicy> parse(JsonSection& k) {
    return std::make_shared<ToyTail>(k.integer("toy_keep", std::nullopt, 0, 1'000'000));
  }

 private:
  int64_t keep_;
};

// engine.exhaustion = "toy_evict": preempt_recompute by another name, which it asks for each
// decision, so that the runs below can expect preempt_recompute's results.
class ToyEvict final : public ExhaustionPolicy {
 public:
  std::string type() const override { return "toy_evict"; }
  bool preempts() const override { return same_.preempts(); }
  bool make_room(ExhaustionSite& site, int64_t id, int64_t need, Time now) const override {
    return same_.make_room(site, id, need, now);
  }
  Refused on_refused(ExhaustionSite& site, int64_t id, bool holds_blocks, Time now) const override {
    return same_.on_refused(site, id, holds_blocks, now);
  }
  static std::shared_ptr<const ExhaustionPolicy> parse(JsonSection&) {
    return std::make_shared<ToyEvict>();
  }

 private:
  PreemptRecompute same_;
};

class PolicyRegistryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The one registry line of each (a shipped policy's line sits in the kind's registry file).
    admission_policies().add("toy_half", {"toy_callers"}, &ToyHalfPolicy::parse);
    kv_policies().add("toy_tail", {"toy_keep"}, &ToyTail::parse);
    exhaustion_policies().add("toy_evict", {}, &ToyEvict::parse);
  }
};

TEST_F(PolicyRegistryTest, ToyAdmissionRunsThroughTheLoaderAndTheEngine) {
  const Scenario s = testing::moshi(
      20, "windowed", {"admission={\"type\":\"toy_half\",\"toy_callers\":14}", "horizon_s=5"});
  EXPECT_EQ(s.admission.type(), "toy_half");
  const nlohmann::json resolved = to_json(s);
  EXPECT_EQ(resolved["admission"]["toy_callers"], 14);
  EXPECT_EQ(resolved["admission"]["memory_guard"], "auto");  // a limiting policy shows its guard
  EXPECT_EQ(to_json(parse_scenario(resolved, "round trip")), resolved);
  const RunResult r = simulate(s);
  EXPECT_EQ(r.peak_live_sessions, 7);
  EXPECT_EQ(r.sessions_rejected, 13);
  EXPECT_TRUE(r.admission.capped);
  EXPECT_FALSE(r.admission.adaptive);
}

TEST_F(PolicyRegistryTest, ToyFieldsAreCheckedUnderTheToyAndIgnoredUnderOthers) {
  // Its own field is validated by its parse, with the field named.
  try {
    testing::moshi(4, "unbounded", {"admission={\"type\":\"toy_half\",\"toy_callers\":1}"});
    FAIL() << "accepted toy_callers 1";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("admission.toy_callers"), std::string::npos) << e.what();
  }
  // Another type's section may carry it (so --set admission.type=none flips a scenario).
  const Scenario s =
      testing::moshi(4, "unbounded", {"admission={\"type\":\"none\",\"toy_callers\":10}"});
  EXPECT_EQ(s.admission.type(), "none");
  // Given by --set, it does nothing, and the scenario's warnings say which type reads it.
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("admission.toy_callers is ignored: it belongs to admission.type "
                               "\"toy_half\", and the type is \"none\""),
            std::string::npos)
      << s.warnings[0];
  const nlohmann::json kept = {{"type", "none"}, {"toy_callers", 10}, {"later", nullptr}};
  EXPECT_EQ(admission_policies().ignored_keys(kept, "none"),
            (std::vector<std::pair<std::string, std::string>>{{"toy_callers", "toy_half"}}));
  EXPECT_TRUE(admission_policies().ignored_keys(kept, "toy_half").empty());
  // A key no registered type reads is still an error.
  EXPECT_THROW(testing::moshi(4, "unbounded", {"admission.toy_typo=1"}), ConfigError);
  // The type list in the message includes the toy, in registration order after the shipped ones.
  try {
    testing::moshi(4, "unbounded", {"admission.type=bogus"});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"gradient\" \"toy_half\""), std::string::npos)
        << e.what();
  }
}

TEST_F(PolicyRegistryTest, ToyKvPolicyEqualsTheWindowItNames) {
  const std::vector<std::string> common = {"kv_policy.sink_tokens=0", "horizon_s=30",
                                           "engine.num_blocks=200"};
  std::vector<std::string> toy = common;
  toy.push_back("kv_policy={\"type\":\"toy_tail\",\"toy_keep\":480}");
  const Scenario a = testing::moshi(40, "windowed", common);
  const Scenario b = testing::moshi(40, "windowed", toy);
  EXPECT_EQ(b.kv_policy.type(), "toy_tail");
  EXPECT_TRUE(b.kv_policy.bounded());
  EXPECT_EQ(to_json(b)["kv_policy"]["toy_keep"], 480);
  const RunResult ra = simulate(a), rb = simulate(b);
  EXPECT_GT(ra.frames_served, 0);
  EXPECT_GT(ra.peak_pool_blocks, 190);  // the pool fills: the stall path runs too
  // Every number of the summary, bit for bit: the general path against the window's closed forms.
  EXPECT_EQ(run_result_json(ra).dump(), run_result_json(rb).dump());
  // Over a Poisson stream of callers who come and go, and with preemption.
  for (const std::string exhaustion : {"stall", "preempt_recompute"}) {
    std::vector<std::string> poisson = {
        "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":4}",
        "workload.duration={\"type\":\"exponential\",\"mean_s\":20}",
        "horizon_s=60",
        "engine.num_blocks=600",
        "engine.exhaustion=" + exhaustion,
        "kv_policy.sink_tokens=0"};
    std::vector<std::string> toy_poisson = poisson;
    toy_poisson.push_back("kv_policy={\"type\":\"toy_tail\",\"toy_keep\":200}");
    poisson.push_back("kv_policy.window_tokens=200");
    const RunResult pa = simulate(testing::moshi(0, "windowed", poisson));
    const RunResult pb = simulate(testing::moshi(0, "windowed", toy_poisson));
    EXPECT_GT(pa.sessions_departed, 50);
    EXPECT_EQ(run_result_json(pa).dump(), run_result_json(pb).dump()) << exhaustion;
  }
}

TEST_F(PolicyRegistryTest, ToyExhaustionEqualsThePolicyItNames) {
  // 60 unbounded callers on 100 blocks: the pool runs out and the newest are preempted.
  const std::vector<std::string> common = {"engine.num_blocks=100", "horizon_s=30"};
  std::vector<std::string> shipped = common, toy = common;
  shipped.push_back("engine.exhaustion=preempt_recompute");
  toy.push_back("engine.exhaustion=toy_evict");
  const RunResult a = simulate(testing::moshi(60, "unbounded", shipped));
  const Scenario sb = testing::moshi(60, "unbounded", toy);
  EXPECT_EQ(to_json(sb)["engine"]["exhaustion"], "toy_evict");
  const RunResult b = simulate(sb);
  EXPECT_GT(a.preemptions, 0);
  EXPECT_EQ(a.preemptions, b.preemptions);
  EXPECT_EQ(a.frames_served, b.frames_served);
}

}  // namespace
}  // namespace metronome
