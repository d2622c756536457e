// recommend: the best (W, S) is the eligible cell serving the most sessions, the quality floor and
// flagged runs exclude cells, and the answer does not depend on the thread count.
#include "sim/analysis/recommend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/config_error.h"

namespace metronome {
namespace {

Scenario base() {
  return load_scenario(
      std::string(METRONOME_SOURCE_DIR) + "/scenarios/admission/moshi_h200_aimd_windowed.json",
      {"horizon_s=200", "workload.arrival.max_sessions=0"});
}

RecommendSpec small() {
  RecommendSpec s;
  s.windows = {240, 480};
  s.sinks = {0, 16};
  s.seeds = 2;
  return s;
}

TEST(Recommend, BestIsTheEligibleCellServingTheMost) {
  RecommendSpec spec = small();
  spec.min_window = 480;  // the floor excludes W = 240, which would serve more
  const Recommendation r = recommend(base(), spec);
  ASSERT_EQ(r.cells.size(), 4u);
  ASSERT_TRUE(r.best.has_value());
  const RecommendCell& b = r.cells[*r.best];
  EXPECT_EQ(b.window, 480);
  for (const auto& c : r.cells) {
    EXPECT_GE(c.memory_cap, c.n_star_p95) << c.window << " " << c.sinks;  // never past memory
    if (c.window < 480) {
      EXPECT_FALSE(c.eligible);
      EXPECT_GT(c.n_star_median, b.n_star_median);  // smaller windows serve more...
    } else if (c.eligible && c.n_star_median > b.n_star_median) {
      // ...but the best eligible one wins, or ties with it (N* ranges over seeds overlap) and
      // keeps less quality (fewer sink + window tokens).
      EXPECT_GE(c.n_star_p95, r.cells.front().n_star_p5) << c.window << " " << c.sinks;
      EXPECT_LT(c.window + c.sinks, b.window + b.sinks);
    }
  }
  // N* sits under both caps and within reach of the binding one.
  EXPECT_LE(b.n_star_median, std::min(b.memory_cap, b.deadline_cap) * 1.05);
  EXPECT_GE(b.n_star_median, std::min(b.memory_cap, b.deadline_cap) * 0.6);
}

TEST(Recommend, SameAnswerWhateverTheThreadCount) {
  RecommendSpec one = small(), two = small();
  one.jobs = 1;
  two.jobs = 2;
  const Scenario s = base();
  EXPECT_EQ(recommend_json(s, one, recommend(s, one)).dump(),
            recommend_json(s, one, recommend(s, two)).dump());
}

TEST(Recommend, QualityFileGivesRatiosToFullAttention) {
  const auto dir = std::filesystem::temp_directory_path() / "metronome_recommend_test";
  std::filesystem::create_directories(dir);
  const auto good = (dir / "q.json").string();
  std::ofstream(good) << R"({"perplexity": [{"window": null, "sinks": 0, "ppl_from": 20},
      {"window": 256, "sinks": 0, "ppl_from": 39}, {"window": 256, "sinks": 4, "ppl_from": 22}]})";
  const auto r = read_ppl_ratios(good);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].second, 39.0 / 20.0);
  EXPECT_EQ(r[1].first, (std::pair<int64_t, int64_t>{256, 4}));
  const auto nofull = (dir / "nofull.json").string();
  std::ofstream(nofull) << R"({"perplexity": [{"window": 256, "sinks": 0, "ppl_from": 39}]})";
  EXPECT_THROW(read_ppl_ratios(nofull), ConfigError);
  const auto wrong = (dir / "wrong.json").string();
  std::ofstream(wrong) << R"({"perplexity": [{"window": "x", "sinks": 0, "ppl_from": 1}]})";
  EXPECT_THROW(read_ppl_ratios(wrong), ConfigError);
}

TEST(Recommend, TiesInsideTheSeedsSpreadGoToTheBetterQuality) {
  // W = 480 with S = 0 and S = 16 serve nearly the same N*: where their ranges over seeds overlap,
  // the cell keeping more tokens (S = 16) is the best, whatever the medians' order.
  RecommendSpec spec = small();
  spec.min_window = 480;
  const Recommendation r = recommend(base(), spec);
  ASSERT_TRUE(r.best.has_value());
  const RecommendCell& top = r.cells.front();
  for (const auto& c : r.cells) {
    if (c.eligible && c.n_star_p95 >= top.n_star_p5 && c.n_star_p5 <= top.n_star_p95) {
      EXPECT_LE(c.window + c.sinks, r.cells[*r.best].window + r.cells[*r.best].sinks);
    }
  }
}

}  // namespace
}  // namespace metronome
