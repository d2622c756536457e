// How a real-time session's KV grows, frame by frame: every frame appends the same number of
// tokens (its input and output), and frame 0 also the session's prompt, prefilled with it. The
// engines, the first-order prediction, pool sizing, the service-rate and capacity bounds and the
// live replay all ask here for a session's context and blocks at frame m, so that no two of them
// can disagree on it. Plain C++ on core/kv_window.h, as the rule beneath it.
#pragma once

#include <cstdint>

#include "core/kv_window.h"

namespace metronome::kv {

struct FrameGrowth {
  int64_t per_frame = 0;  // tokens every frame appends
  int64_t prompt = 0;     // tokens frame 0 appends before its own

  // The prompt tokens frame m carries (ingests and appends): all of them on frame 0, none later.
  constexpr METRONOME_HD int64_t prompt_at(int64_t m) const { return m <= 0 ? prompt : 0; }
  // Tokens frame m appends to the session's KV.
  constexpr METRONOME_HD int64_t appended(int64_t m) const { return per_frame + prompt_at(m); }
  // Tokens the session has cached when frame m starts: those frames 0..m-1 appended.
  constexpr METRONOME_HD int64_t context_at(int64_t m) const {
    return m <= 0 ? 0 : prompt + m * per_frame;
  }
  // The most frames whose KV fits in `tokens`: the largest m with context_at(m) <= tokens (with
  // nothing appended per frame, every frame past the prompt's: INT64_MAX).
  constexpr METRONOME_HD int64_t frames_within(int64_t tokens) const {
    if (tokens < context_at(1)) return 0;
    return per_frame > 0 ? (tokens - prompt) / per_frame : INT64_MAX;
  }
  // Blocks the session holds while frame m is served: its peak over that frame.
  constexpr METRONOME_HD int64_t step_blocks_at(int64_t m, Window w, BlockSize block_size) const {
    return step_blocks(context_at(m), appended(m), w, block_size);
  }
};

}  // namespace metronome::kv
