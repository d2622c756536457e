// The simulator's view of a benchmarked step: the PassShape the engine would build for `sessions`
// sessions of `q_len` new tokens on `ctx` cached tokens (sim/engine.cpp, Engine::try_start_step,
// ingest pass). Written once here for the fit and the report; a test pins it against hand counts.
#pragma once

#include <algorithm>

#include "calibrate/grid.h"
#include "kernels/kv_window.h"
#include "sim/cost/cost_model.h"

namespace metronome::calibrate {

inline PassShape step_pass_shape(const GridPoint& p) {
  const kv::Window w{p.window, p.sinks};
  // Keys cached and visible to the frame's first query: what a flash-style pass reads per session.
  const int64_t cached = kv::visible_keys(p.ctx, w) - 1;
  // Mean keys per query: the cached ones plus, causally, half the frame.
  double per_query = static_cast<double>(cached) + 0.5 * static_cast<double>(p.q_len + 1);
  if (!w.unbounded()) per_query = std::min(per_query, static_cast<double>(w.window + w.sinks + 1));
  PassShape s;
  s.sessions = p.sessions;
  s.query_tokens = int64_t{p.sessions} * p.q_len;
  s.kv_read_tokens = int64_t{p.sessions} * cached;
  s.qk_pairs = static_cast<double>(p.sessions) * static_cast<double>(p.q_len) * per_query;
  return s;
}

}  // namespace metronome::calibrate
