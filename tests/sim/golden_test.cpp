// Tiny scenarios whose whole summary JSON is kept in the repo and compared exactly, so any change
// in behaviour shows up as a reviewed diff. Regenerate with METRONOME_UPDATE_GOLDEN=1 after
// checking it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/output_number.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/engine/engine.h"

namespace metronome {

class Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Golden, SummaryMatchesCommittedJson) {
  const std::string dir = std::string(METRONOME_SOURCE_DIR) + "/tests/sim/golden/";
  const std::string name = GetParam();
  const Scenario s = load_scenario(dir + name + ".scenario.json");
  const RunResult r = simulate(s);
  nlohmann::json j = run_json(s, predict_first_order(s), r, make_cost_model(s)->label());
  j.erase("metronome_version");                   // a version bump is not a behaviour change
  const std::string got = output_text(j) + "\n";  // as summary.json is written
  const std::string path = dir + name + ".summary.json";
  if (std::getenv("METRONOME_UPDATE_GOLDEN")) std::ofstream(path) << got;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " missing; run with METRONOME_UPDATE_GOLDEN=1 to create it";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "behaviour changed for " << name;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Golden,
                         ::testing::Values("tiny_unbounded_stall", "tiny_windowed_preempt"));

}  // namespace metronome
