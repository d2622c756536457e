// A run of single sessions priced in sums (FramePasses::add_run, the engine's bulk take) is the
// pass shape of adding each session on its own: every field equal, bit for bit.
#include "sim/cost/pass_shape.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/sim/expect_same_passes.h"

namespace metronome {
namespace {

TEST(PassShape, RunOfSessionsEqualsAddingEach) {
  for (kv::Window w : {kv::Window{}, kv::Window{480, 16}, kv::Window{7, 0}}) {
    for (int64_t q : {0, 1, 3, 12}) {
      for (int64_t n_out : {0, 1, 2, 5}) {
        FramePasses each, run;
        each.add(2, 5, 40, n_out, w);  // something already in the step
        run.add(2, 5, 40, n_out, w);
        int64_t k = 0, sum_cached = 0;
        double sum_twice = 0;
        for (int64_t i = 0; i < 200; ++i) {
          const int64_t cached = (i * 37) % 1500;
          each.add(1, q, cached, n_out, w);
          ++k;
          sum_cached += cached;
          sum_twice += static_cast<double>(twice_keys_per_query(q, cached, twice_keys_cap(w)));
        }
        run.add_run(k, q, sum_cached, sum_twice, n_out);
        expect_same(each, run);
      }
    }
  }
  FramePasses none;  // an empty run adds nothing, not even a decode pass
  none.add_run(0, 1, 0, 0, 3);
  EXPECT_EQ(none.decode_passes, 0);
  EXPECT_EQ(none.decode.sessions, 0);
}

// The halves: one query over no cached keys reads itself (1 pair), 4 new tokens read 1+2+3+4.
TEST(PassShape, QueryPairsCountCausalHalves) {
  EXPECT_EQ(twice_query_pairs(1, 0, kv::Window{}), 2.0);
  EXPECT_EQ(twice_query_pairs(4, 0, kv::Window{}), 2.0 * 10);
  EXPECT_EQ(twice_query_pairs(4, 100, kv::Window{}), 2.0 * (400 + 10));
  // A window caps each query at S + W + 1 keys.
  EXPECT_EQ(twice_query_pairs(2, 1000, kv::Window{8, 2}), 2.0 * 2 * 11);
}

}  // namespace
}  // namespace metronome
