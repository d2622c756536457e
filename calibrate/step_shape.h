// The simulator's view of a benchmarked step: the ingest pass the engine builds for `sessions`
// sessions of `q_len` new tokens on `ctx` cached tokens, by the one pass-shape rule
// (sim/cost/pass_shape.h), the one the engine's schedulers use.
#pragma once

#include <algorithm>

#include "calibrate/grid.h"
#include "core/kv_window.h"
#include "sim/cost/pass_shape.h"

namespace metronome::calibrate {

inline PassShape step_pass_shape(const GridPoint& p) {
  const kv::Window w{p.window, p.sinks};
  // Keys cached and visible to the frame's first query: what a flash-style pass reads per session.
  PassShape s;
  add_chunk(s, p.sessions, p.q_len, kv::visible_keys(p.ctx, w) - 1, w);
  return s;
}

}  // namespace metronome::calibrate
