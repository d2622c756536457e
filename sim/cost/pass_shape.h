// How a batch becomes forward passes: the one rule the engine's two schedulers, the service-rate
// check and calibration share. Attention per query reads the session's cached visible keys plus,
// causally, half of the new tokens; a window caps it at kv::max_visible_keys (S + W + 1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/kv_window.h"
#include "sim/cost/cost_model.h"

namespace metronome {

// Twice the keys each of a session's `q` new queries reads on average (each reads the cached
// visible keys and, causally, half of the new tokens; a window caps it at S + W + 1): a whole
// number, so sums of it are exact below 2^53. `cap` is twice_keys_cap(w).
inline int64_t twice_keys_cap(kv::Window w) {
  return w.unbounded() ? std::numeric_limits<int64_t>::max() : 2 * kv::max_visible_keys(w);
}
inline int64_t twice_keys_per_query(int64_t q, int64_t cached, int64_t cap) {
  return std::min(2 * cached + q + 1, cap);
}
// Twice one session's query-key products. A double, so that no configured size can overflow it.
inline double twice_query_pairs(int64_t q, int64_t cached, kv::Window w) {
  return static_cast<double>(q) *
         static_cast<double>(twice_keys_per_query(q, cached, twice_keys_cap(w)));
}

// `count` sessions each computing `q` new tokens (q > 0) over `cached` cached visible keys, in one
// pass: a frame's ingest, a prefill chunk, or one decode token.
inline void add_chunk(PassShape& p, int64_t count, int64_t q, int64_t cached, kv::Window w) {
  p.sessions += count;
  p.query_tokens += q * count;
  p.kv_read_tokens += cached * count;
  p.qk_pairs += 0.5 * twice_query_pairs(q, cached, w) * static_cast<double>(count);
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
  // What add(1, q, cached_i, n_out, w) adds for each of k sessions, from the sums over them of
  // cached_i and of twice_keys_per_query(q, cached_i, twice_keys_cap(w)): a run of single sessions
  // priced in a few sums, exact (as the per-session adds are) while below 2^53.
  void add_run(int64_t k, int64_t q, int64_t sum_cached, double sum_twice_keys, int64_t n_out) {
    if (k == 0) return;
    if (q > 0) {
      ingest.sessions += k;
      ingest.query_tokens += q * k;
      ingest.kv_read_tokens += sum_cached;
      ingest.qk_pairs += 0.5 * (static_cast<double>(q) * sum_twice_keys);
    }
    const int64_t d = std::max<int64_t>(0, n_out - (q > 0 ? 1 : 0));
    if (d > 0) {
      decode.sessions += k;
      decode.query_tokens += k;
      decode.kv_read_tokens += sum_cached + q * k;
      decode.qk_pairs += static_cast<double>(sum_cached + (q + 1) * k);
      decode_passes = std::max(decode_passes, d);
    }
  }
  double seconds(const CostModel& cost) const {
    const double in = cost.pass_seconds(ingest);
    // Without decode passes the second term is 0 x a finite price, so the sum is `in` exactly: one
    // cost-model call fewer per step where each frame has one output token.
    if (decode_passes == 0) return in;
    return in + static_cast<double>(decode_passes) * cost.pass_seconds(decode);
  }
};

}  // namespace metronome
