// quality_json without a model: an undefined perplexity (an empty range) is null, never 0.
#include "quality/quality_run.h"

#include <gtest/gtest.h>

namespace metronome::quality {
namespace {

// --from at or past N leaves [from, N) empty; the JSON said "ppl_from": 0.0.
TEST(QualityRun, EmptyRangeHasNullPerplexity) {
  QualityResult r;
  PerplexityResult full;
  full.policy = parse_policy("full", "--policy");
  full.nll = {1.0, 1.0, 1.0};
  full.ppl = 2.718281828;
  full.ppl_from = 0;             // from >= N: nothing scored
  full.bucket_ppl = {0, 2.718};  // bucket 0 of size 1 holds only token 0: no prediction
  r.perplexity.push_back(full);
  QualityOptions o;
  o.tokens = 4;
  o.from = 10;
  const nlohmann::json j = quality_json(r, o);
  ASSERT_EQ(j["perplexity"].size(), 1u);
  EXPECT_TRUE(j["perplexity"][0]["ppl_from"].is_null()) << j["perplexity"][0].dump();
  EXPECT_TRUE(j["perplexity"][0]["bucket_ppl"][0].is_null());
  EXPECT_DOUBLE_EQ(j["perplexity"][0]["bucket_ppl"][1].get<double>(), 2.718);
  r.perplexity[0].ppl_from = 3.5;
  EXPECT_DOUBLE_EQ(quality_json(r, o)["perplexity"][0]["ppl_from"].get<double>(), 3.5);
}

}  // namespace
}  // namespace metronome::quality
