// The frame scheduler's per-frame arithmetic on a scenario's constants: the KV a frame appends,
// the blocks it takes and frees, and the passes that price it. Step end, which runs it once per
// served frame, copies it into a local: the stores into sessions would otherwise make the compiler
// reload every constant from the engine, once per frame. (The bulk take and the usual ring read it
// by reference, which measured a few instructions per frame cheaper there.)
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "core/frame_growth.h"
#include "core/kv_window.h"
#include "sim/cost/pass_shape.h"
#include "sim/engine/session.h"
#include "sim/kv_policy/kv_rule.h"

namespace metronome {

struct FrameRule {
  kv::FrameGrowth growth;
  int64_t n_in, n_out;
  KvRule residency;  // the KV policy on this growth and block size
  kv::BlockSize bs = residency.block_size();
  kv::Window w = residency.pricing();  // the window passes are priced under
  // Contexts from which the closed forms of core/kv_window.h hold (most frames are served there);
  // none for a policy that is no window.
  int64_t settled =
      residency.is_window() ? kv::settled_from(w, bs) : std::numeric_limits<int64_t>::max();
  int64_t cached_cap = kv::settled_cached_cap(w);
  int64_t twice_cap = twice_keys_cap(w);

  // KV tokens the session's next frame appends (its prompt first). C, here and below: a Session,
  // or the usual ring's copy of its per-frame fields (sim/scheduler/usual_ring.h), which bears
  // the same names.
  template <class C>
  int64_t appended(const C& s) const {
    return growth.appended(s.next_frame);
  }
  // Blocks the session holds while its next frame is served.
  int64_t step_blocks(const Session& s) const { return residency.step_blocks(s.ctx, appended(s)); }
  // Blocks a session holds between steps once it has cached ctx tokens.
  int64_t resident_blocks(int64_t ctx) const { return residency.resident_blocks(ctx); }
  // Blocks each member frees once its frame is served (it held step_blocks while it was).
  // kWindow: as in KvRule, the caller has seen that the policy is a window.
  template <bool kWindow = false, class C>
  int64_t freed_blocks(const C& s) const {
    return s.ctx >= settled ? kv::settled_freed_blocks(s.ctx, appended(s), w, bs)
                            : s.held - residency.resident_blocks<kWindow>(s.ctx + appended(s));
  }
  // A step member's frame is served: its KV grows by the frame and the blocks that fell out of
  // its window go; returns those (per member).
  template <bool kWindow = false, class C>
  int64_t serve_frame(C& s) const {
    const int64_t f = freed_blocks<kWindow>(s);
    if (f < 0) throw std::logic_error("FrameScheduler: a step left a session more blocks");
    s.ctx += appended(s);
    s.held -= f;
    assert(s.held == resident_blocks(s.ctx));
    return f;
  }
  // The cached visible keys a pass reads for a session that has cached ctx tokens.
  template <bool kWindow = false>
  int64_t cached(int64_t ctx) const {
    return ctx >= settled ? std::min(ctx, cached_cap) : residency.cached<kWindow>(ctx);
  }
  // Every member ingests its frame (with its prompt first, or its history to recompute after a
  // preemption) over its cached visible keys, then decodes.
  void add_passes(const Session& s, FramePasses& p) const {
    p.add(s.count, n_in + growth.prompt_at(s.next_frame) + s.recompute,
          s.recompute > 0 ? 0 : cached(s.ctx), n_out, w);
  }
  // For a live single caller past its first frame (which appends growth.per_frame), between steps
  // (holding resident_blocks(ctx)): the blocks its next frame allocates, and its part of a run's
  // sums.
  template <bool kWindow = false>
  int64_t later_new_blocks(int64_t ctx, int64_t held) const {
    return ctx >= settled ? kv::settled_new_blocks(ctx, growth.per_frame, bs)
                          : residency.step_blocks<kWindow>(ctx, growth.per_frame) - held;
  }
  struct RunSums {  // settled callers by their contexts, the others by cached keys and pairs
    int64_t settled = 0, sum_ctx = 0, young = 0, young_cached = 0;
    double young_twice_keys = 0;
  };
  template <bool kWindow = false>
  void add_to_run(int64_t ctx, RunSums& r) const {
    if (ctx >= settled) [[likely]] {
      ++r.settled;
      r.sum_ctx += ctx;
    } else {
      const int64_t c = cached<kWindow>(ctx);
      ++r.young;
      r.young_cached += c;
      r.young_twice_keys += static_cast<double>(twice_keys_per_query(n_in, c, twice_cap));
    }
  }
  // A usual caller (Session::usual_single, between steps) joins a bulk take if the blocks of its
  // next frame fit in `left`: it takes them and adds its part to the run's sums.
  template <bool kWindow = false, class C>
  bool join_run(C& s, int64_t& left, RunSums& sums) const {
    assert(s.held == resident_blocks(s.ctx));
    const int64_t need = later_new_blocks<kWindow>(s.ctx, s.held);
    if (need > left) return false;
    left -= need;
    s.held += need;
    add_to_run<kWindow>(s.ctx, sums);
    return true;
  }
  // add_passes for each caller of a run, from its sums: exact, as the sums are whole numbers.
  void add_run_passes(const RunSums& r, FramePasses& p) const {
    if (r.settled > 0) add_settled_run(r.settled, r.sum_ctx, p);
    p.add_run(r.young, n_in, r.young_cached, r.young_twice_keys, n_out);
  }
  // add_passes for each of k settled single callers (past their first frame, ctx >= settled),
  // from the sum of their contexts: each reads min(ctx, cached_cap) cached keys, which is the
  // cap when windowed (settled is past it) and ctx unbounded. The sums are whole numbers, exact
  // below 2^53 in any order, so this equals the per-session adds bit for bit.
  void add_settled_run(int64_t k, int64_t sum_ctx, FramePasses& p) const {
    if (w.unbounded()) {
      p.add_run(k, n_in, sum_ctx,
                2.0 * static_cast<double>(sum_ctx) + static_cast<double>(k * (n_in + 1)), n_out);
    } else {
      p.add_run(k, n_in, k * cached_cap,
                static_cast<double>(k) *
                    static_cast<double>(twice_keys_per_query(n_in, cached_cap, twice_cap)),
                n_out);
    }
  }
};

}  // namespace metronome
