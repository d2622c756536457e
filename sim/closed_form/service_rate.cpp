#include "sim/closed_form/service_rate.h"

#include <algorithm>

#include "sim/cost/pass_shape.h"

namespace metronome {
namespace {

// Engine time to serve one frame of `n` sessions at `ctx` cached tokens at the full-step pace.
double period_work(const Scenario& s, int64_t n, int64_t ctx, const CostModel& cost) {
  return full_step_utilisation(s, n, s.kv_rule().cached(ctx), cost) * s.workload.frame_period_s;
}

}  // namespace

double full_step_utilisation(const Scenario& s, int64_t n, int64_t cached, const CostModel& cost) {
  if (n <= 0) return 0;
  const int64_t step = std::min(n, s.engine.max_sessions_per_step);
  FramePasses passes;
  passes.add(step, s.workload.input_tokens_per_frame, cached, s.workload.output_tokens_per_frame,
             s.kv_rule().pricing());
  const double steps = static_cast<double>(n) / static_cast<double>(step);
  return steps * passes.seconds(cost) / s.workload.frame_period_s;
}

int64_t full_step_sessions(const Scenario& s, int64_t cached, const CostModel& cost) {
  // Utilisation rises with n (a bigger step costs more, and past max_num_seqs each session adds
  // a fixed share of a full step): doubling, then bisection.
  auto keeps_pace = [&](int64_t n) { return full_step_utilisation(s, n, cached, cost) <= 1; };
  int64_t lo = 0, hi = 1;
  while (hi <= (int64_t{1} << 40) && keeps_pace(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (keeps_pace(mid) ? lo : hi) = mid;
  }
  return lo;
}

ServiceCheck check_service(const Scenario& s, const FirstOrderPrediction& p,
                           const CostModel& cost) {
  ServiceCheck c;
  const auto& w = s.workload;
  // The callers live when the pool fills, sharing it; else the most ever live. No caller holds
  // more than the longest call's context (calls shorter than a pool's share end below it).
  c.sessions =
      std::max<int64_t>(1, p.t_sat_blocks_s ? p.sessions_at_t_sat : p.peak_concurrent_sessions);
  c.period_s = w.frame_period_s;
  const int64_t pool_tokens = p.pool.num_blocks * s.engine.block_size;
  c.context = std::min(pool_tokens / c.sessions, w.growth().context_at(p.longest_call_frames));
  const KvRule rule = s.kv_rule();
  if (s.kv_policy.bounded()) {
    c.context = std::min(c.context, s.kv_policy.policy->max_resident_tokens(w.growth()));
  }
  c.work_s = period_work(s, c.sessions, c.context, cost);
  {
    FramePasses first;
    c.step_sessions = std::min(c.sessions, s.engine.max_sessions_per_step);
    first.add(c.step_sessions, w.input_tokens_per_frame, rule.cached(c.context),
              w.output_tokens_per_frame, rule.pricing());
    c.ttft_s = cost.pass_seconds(first.ingest);
    c.decode_passes = first.decode_passes;
    if (first.decode_passes > 0) c.tpot_s = cost.pass_seconds(first.decode);
  }
  c.keeps_up = c.work_s <= c.period_s;
  if (c.keeps_up || s.kv_policy.bounded() || !w.arrival.policy->one_cohort()) return c;

  // All callers at once: frame m is served at the later of its release and the end of frame m-1,
  // each frame costing what the cost model says at its context; the pool is full at the first
  // frame whose blocks do not fit.
  const int64_t n = c.sessions;
  const kv::FrameGrowth g = w.growth();
  const double start_s = w.arrival.policy->start_s();
  double t = start_s;
  for (int64_t m = 0;; ++m) {
    const int64_t ctx = g.context_at(m);
    if (n * rule.step_blocks_at(m) > p.pool.num_blocks) {
      c.t_sat_service_limited_s = t;
      break;
    }
    t = std::max(t + period_work(s, n, ctx, cost),
                 start_s + static_cast<double>(m + 1) * w.frame_period_s);
    if (t > s.horizon_s) break;
  }
  return c;
}

}  // namespace metronome
