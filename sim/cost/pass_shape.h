// How a batch becomes forward passes: the one rule the engine's two schedulers, the service-rate
// check and calibration share. Attention per query reads the session's cached visible keys plus,
// causally, half of the new tokens; a window caps it at kv::max_visible_keys (S + W + 1).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/kv_window.h"
#include "sim/cost/cost_model.h"

namespace metronome {

// `count` sessions each computing `q` new tokens (q > 0) over `cached` cached visible keys, in one
// pass: a frame's ingest, a prefill chunk, or one decode token.
inline void add_chunk(PassShape& p, int64_t count, int64_t q, int64_t cached, kv::Window w) {
  double per_query = static_cast<double>(cached) + 0.5 * static_cast<double>(q + 1);
  if (!w.unbounded()) per_query = std::min(per_query, static_cast<double>(kv::max_visible_keys(w)));
  p.sessions += count;
  p.query_tokens += q * count;
  p.kv_read_tokens += cached * count;
  p.qk_pairs += static_cast<double>(q) * per_query * static_cast<double>(count);
}

// The frame scheduler's step: every session ingests its frame in one pass (which samples the first
// output token) and decodes the rest one pass per token, all sessions batched together.
struct FramePasses {
  PassShape ingest, decode;
  int64_t decode_passes = 0;

  void add(int64_t count, int64_t q, int64_t cached, int64_t n_out, kv::Window w) {
    if (q > 0) add_chunk(ingest, count, q, cached, w);
    const int64_t d = std::max<int64_t>(0, n_out - (q > 0 ? 1 : 0));
    if (d > 0) {
      const int64_t after = cached + q;
      decode.sessions += count;
      decode.query_tokens += count;
      decode.kv_read_tokens += after * count;
      decode.qk_pairs += static_cast<double>(after + 1) * static_cast<double>(count);
      decode_passes = std::max(decode_passes, d);
    }
  }
  double seconds(const CostModel& cost) const {
    return cost.pass_seconds(ingest) +
           static_cast<double>(decode_passes) * cost.pass_seconds(decode);
  }
};

}  // namespace metronome
