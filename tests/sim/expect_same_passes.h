// Test helper: two forward passes (or two steps' passes) priced the same, field for field and bit
// for bit, as the engine's bulk pricing must be against adding each session.
#pragma once

#include <gtest/gtest.h>

#include "sim/cost/pass_shape.h"

namespace metronome {

inline void expect_same(const PassShape& a, const PassShape& b) {
  EXPECT_EQ(a.sessions, b.sessions);
  EXPECT_EQ(a.query_tokens, b.query_tokens);
  EXPECT_EQ(a.kv_read_tokens, b.kv_read_tokens);
  EXPECT_EQ(a.qk_pairs, b.qk_pairs);
}

inline void expect_same(const FramePasses& a, const FramePasses& b) {
  expect_same(a.ingest, b.ingest);
  expect_same(a.decode, b.decode);
  EXPECT_EQ(a.decode_passes, b.decode_passes);
}

}  // namespace metronome
