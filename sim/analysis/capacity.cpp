#include "sim/analysis/capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "base/config_error.h"
#include "base/progress.h"
#include "base/version.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/closed_form/service_rate.h"
#include "sim/config/config_limits.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/step_time.h"
#include "sim/engine/engine.h"
#include "sim/workload/fixed_interval_arrivals.h"
#include "sim/workload/poisson_arrivals.h"

namespace metronome {
namespace {

// The scenario with n callers over one frame period, calls outlasting the probe, no admission
// control and a pool that never binds: n callers at their most over the probe's frames, and a
// block to spare (not a huge pool: a preempting engine bounds a full batch's recompute by the
// pool). Phases evenly spread (the best case) or, as Poisson callers get them, at random (n
// Poisson arrivals at n per period).
Scenario probe_scenario(const Scenario& s, int64_t n, double probe_s, bool random_phases) {
  Scenario p = s;
  const double period = s.workload.frame_period_s;
  if (random_phases) {
    p.workload.arrival.policy =
        std::make_shared<const PoissonArrivals>(0, static_cast<double>(n) / period, n);
  } else {
    p.workload.arrival.policy =
        std::make_shared<const FixedIntervalArrivals>(0, n, period / static_cast<double>(n));
  }
  p.workload.duration.policy = std::make_shared<const FixedDuration>(2 * probe_s + 1);
  p.horizon_s = probe_s;
  p.admission = AdmissionConfig{};
  // Random phases are the arrivals' draw; a scenario that spreads callers' clocks spreads these.
  if (random_phases) p.admission.join = s.admission.join;
  // Every caller is released within a frame period of the start (Poisson ones mostly), so none
  // serves more than the probe's frames plus one.
  const auto frames = static_cast<int64_t>(probe_s / period) + 2;
  const KvRule rule = s.kv_rule();
  // (At least one caller's bound: a scenario whose pool cannot hold one is refused.)
  p.engine.num_blocks = std::max(n * rule.most_blocks_through(frames + 1) + 1, rule.bound());
  return p;
}

bool meets_deadline(const Scenario& s, const CostModel& cost, int64_t n, double fraction,
                    double probe_s, bool random) {
  const Scenario p = probe_scenario(s, n, probe_s, random);
  check_step_bounds(p, cost);
  const RunResult r = simulate(p, cost);
  // Both judged at steady state: a window's fill and the callers' first frames are not what the
  // cap serves (chunked models' start-up alone put 1.2% of a 17 s probe's frames past silence).
  return r.steady_reported_latency.percentile(0.95) <= fraction * s.workload.deadline() &&
         (r.steady_frames_silent == 0 || r.steady_frames_silent * 100 < r.steady_frames_due);
}

}  // namespace

double default_probe_s(const Scenario& s) {
  const double rate = static_cast<double>(s.workload.kv_tokens()) / s.workload.frame_period_s;
  const double call = std::min(s.workload.duration.fixed_s().value_or(s.horizon_s), s.horizon_s);
  if (const auto cap = s.kv_rule().cap_frames()) {
    // A capped call ends at the cap: as unbounded KV, its end is where its context is largest (a
    // probe past it would hold no caller).
    return std::max(2 * s.workload.frame_period_s,
                    std::min(call, static_cast<double>(*cap) * s.workload.frame_period_s));
  }
  if (s.kv_policy.bounded() && rate > 0) {
    // Long enough for every session's resident KV to reach its bound, plus as long again at steady
    // state.
    const int64_t most = s.kv_policy.policy->max_resident_tokens(s.workload.growth());
    return std::max(10.0, 2.0 * static_cast<double>(most) / rate);
  }
  // Unbounded: the latency at the end of a call, where its context (and cost) is largest.
  return call;
}

// The most callers the deadline search probes.
constexpr int64_t kMostCallers = int64_t{1} << 20;

CapacityReport compute_capacity(const Scenario& s, double fraction, double probe_s, int phase_draws,
                                Progress* progress) {
  if (probe_s <= 0) probe_s = default_probe_s(s);
  // The steady latency is read over the probe's second half: shorter than a frame period, it
  // holds no frame of some callers (0.05 s of 80 ms frames reported a deadline cap of 0). An
  // error, not a cap.
  if (probe_s < 2 * s.workload.frame_period_s) {
    throw ConfigError(fmt::format(
        "{}: capacity probe of {:.6g} s (--probe-s, or the horizon): its second half, where the "
        "steady latency is measured, is shorter than a frame period; expected a probe of at "
        "least {:.6g} s (two frame periods)",
        s.source, probe_s, 2 * s.workload.frame_period_s));
  }
  // The search has no bound of its own for vLLM's scheduler (the pace cap below is the frame
  // scheduler's), and doubled its probes up to a million callers: 15 minutes and 10 GB, not an
  // answer.
  if (s.engine.scheduler != "frame") {
    throw ConfigError(fmt::format(
        "{}: engine.scheduler \"{}\": the deadline search probes the frame scheduler, whose full "
        "steps bound it; expected engine.scheduler \"frame\" (--set engine.scheduler=frame)",
        s.source, s.engine.scheduler));
  }
  CapacityReport c;
  c.fraction = fraction;
  c.probe_s = probe_s;
  // One cost model for every probe: the probes vary the callers, never the model, GPU or costs.
  const std::unique_ptr<CostModel> cost = make_unchecked_cost_model(s);
  c.cost_model = cost->label();
  const auto pred = predict_first_order(s);
  // The most blocks a caller holds over its call (KvRule::most_blocks_through: a bounded policy's
  // bound once its call reaches it, else what its tokens cover at hang-up).
  c.call_s = std::min(s.workload.duration.fixed_s().value_or(s.horizon_s), s.horizon_s);
  const KvRule rule = s.kv_rule();
  const int64_t most = rule.most_blocks_through(
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(c.call_s / s.workload.frame_period_s))));
  c.blocks_per_caller = most;
  c.memory_cap_depends_on_call_length = !s.kv_policy.bounded() || most < rule.bound();
  c.memory_cap = pred.pool.num_blocks / std::max<int64_t>(1, most);  // (a caller of no KV holds 0)
  // A probe too short to show a slow overload still reads a low latency (a 24 s probe put an
  // Omni cap at 1041 callers where 1005 missed 20% of frames over 1000 s): past the frame
  // scheduler's full-step pace at the contexts the probe ends with (its costliest frames), no
  // probe can pass.
  // (A capped call's context stops at its cap, whatever the probe's length.)
  const int64_t end_ctx = s.workload.growth().context_at(
      std::min(static_cast<int64_t>(std::floor(probe_s / s.workload.frame_period_s)),
               rule.cap_frames().value_or(std::numeric_limits<int64_t>::max())));
  const int64_t pace = full_step_sessions(s, rule.cached(end_ctx), *cost);
  c.pace_cap = pace;  // the frame scheduler's, the only one searched
  // Frames that cost (next to) nothing leave the deadline nothing to bind: the search would
  // simulate up to a million callers per probe, for hours, to report its own limit.
  if (pace > kMostCallers) {
    throw ConfigError(fmt::format(
        "{}: under cost model '{}' one step serves over {} callers' frames within a frame period "
        "(a frame costs {} input and {} output tokens): no deadline cap to find; expected frames "
        "the cost model prices (tokens per frame, or a calibration with non-zero costs)",
        s.source, c.cost_model, kMostCallers, s.workload.input_tokens_per_frame,
        s.workload.output_tokens_per_frame));
  }
  // Doubling then bisection on the deadline probe: lo meets it, hi does not.
  auto probe = [&](const Scenario& sc, int64_t n, bool random) {
    if (c.pace_cap && n > *c.pace_cap) return false;
    const bool ok = meets_deadline(sc, *cost, n, fraction, probe_s, random);
    ++c.probes;
    if (progress) progress->add();
    return ok;
  };
  auto search = [&](const Scenario& sc, bool random) {
    int64_t lo = 0, hi = 1;
    while (hi <= kMostCallers && probe(sc, hi, random)) {
      lo = hi;
      hi *= 2;
    }
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (probe(sc, mid, random) ? lo : hi) = mid;
    }
    return lo;
  };
  c.deadline_cap = search(s, false);
  // Under the scenario's own arrivals too: Poisson callers have random phases, whose bunching
  // makes the tail later than evenly spread callers'. A few draws of phases, reported beside the
  // evenly spread cap, which binds, not in its place: a run's phases are one draw among many.
  c.random_phases = s.workload.arrival.random();
  if (c.random_phases) {
    if (!seeds_fit(s.seed, phase_draws)) {
      throw ConfigError(fmt::format(
          "--phase-draws {} from seed {}: the last draw's seed is past {}, the largest scenario "
          "seed",
          phase_draws, s.seed, kMaxSeed));
    }
    std::vector<int64_t> caps;
    for (int k = 0; k < std::max(1, phase_draws); ++k) {
      Scenario sc = s;
      sc.seed = s.seed + static_cast<uint64_t>(k);
      caps.push_back(search(sc, true));
    }
    std::sort(caps.begin(), caps.end());
    c.phase_draws = static_cast<int64_t>(caps.size());
    c.deadline_cap_random = caps[(caps.size() - 1) / 2];
    c.deadline_cap_random_min = caps.front();
    c.deadline_cap_random_max = caps.back();
  }
  c.binding = c.deadline_cap < c.memory_cap ? "deadline" : "memory";
  return c;
}

nlohmann::json capacity_json(const Scenario& s, const CapacityReport& c) {
  return {
      {"metronome_version", version_string()},
      {"cost_model", c.cost_model},
      {"scenario", to_json(s)},
      {"capacity",
       {{"memory_cap_sessions", c.memory_cap},
        {"memory_cap_blocks_per_session", c.blocks_per_caller},
        {"memory_cap_depends_on_call_length", c.memory_cap_depends_on_call_length},
        {"memory_cap_call_s",
         c.memory_cap_depends_on_call_length ? nlohmann::json(c.call_s) : nlohmann::json(nullptr)},
        {"deadline_cap_sessions", c.deadline_cap},
        {"pace_cap_sessions", c.pace_cap ? nlohmann::json(*c.pace_cap) : nlohmann::json(nullptr)},
        {"deadline_cap_random_phases_sessions",
         c.random_phases ? nlohmann::json(c.deadline_cap_random) : nlohmann::json(nullptr)},
        {"deadline_cap_random_phases_min",
         c.random_phases ? nlohmann::json(c.deadline_cap_random_min) : nlohmann::json(nullptr)},
        {"deadline_cap_random_phases_max",
         c.random_phases ? nlohmann::json(c.deadline_cap_random_max) : nlohmann::json(nullptr)},
        {"phase_draws", c.phase_draws},
        {"deadline_fraction", c.fraction},
        {"deadline_ms", s.workload.deadline() * 1e3},
        {"probe_s", c.probe_s},
        {"probe_runs", c.probes},
        {"binding", c.binding}}}};
}

std::string capacity_text(const Scenario& s, const CapacityReport& c) {
  std::string out = fmt::format("scenario      {} ({} on {}, {} KV)\n", s.name, s.model.name,
                                s.gpu.name, s.kv_policy.type());
  if (!s.kv_policy.bounded()) {
    out += fmt::format(
        "memory cap    {} sessions for {:.0f} s calls ({} blocks each at hang-up; unbounded KV: "
        "fewer the longer calls last)\n",
        c.memory_cap, c.call_s, c.blocks_per_caller);
  } else if (c.memory_cap_depends_on_call_length) {
    out += fmt::format(
        "memory cap    {} sessions for {:.0f} s calls ({} blocks each: the calls end before {} "
        "KV reaches its bound, so each holds what unbounded KV would)\n",
        c.memory_cap, c.call_s, c.blocks_per_caller, s.kv_policy.type());
  } else {
    out += fmt::format(
        "memory cap    {} sessions ({} KV bounds each at {} blocks, however long "
        "calls last)\n",
        c.memory_cap, s.kv_policy.type(), c.blocks_per_caller);
  }
  const std::string drawn_phases = s.admission.join == "spread" ? "spread joins" : "random phases";
  out += fmt::format(
      "deadline cap  {} sessions (reported p95 <= {:.2f} x {:.1f} ms after a {:.0f} s "
      "probe, {}; {} simulated runs)\n",
      c.deadline_cap, c.fraction, s.workload.deadline() * 1e3, c.probe_s,
      c.random_phases
          ? (c.phase_draws == 1
                 ? fmt::format("callers evenly spread over a frame period; {} at the {} of "
                               "one draw of Poisson callers",
                               c.deadline_cap_random, drawn_phases)
                 : fmt::format("callers evenly spread over a frame period; {} (median; {} to {}) "
                               "at the {} of {} draws of Poisson callers",
                               c.deadline_cap_random, c.deadline_cap_random_min,
                               c.deadline_cap_random_max, drawn_phases, c.phase_draws))
          : std::string("callers evenly spread over a frame period"),
      c.probes);
  if (c.pace_cap) {
    out += fmt::format(
        "pace cap      {} sessions (steps of up to {} keep pace with {:.1f} ms frames at the "
        "probe's last contexts; past it frames fall further behind every period, however low a "
        "short run reads)\n",
        *c.pace_cap, s.engine.max_sessions_per_step, s.workload.frame_period_s * 1e3);
  }
  out += fmt::format("binding       {} ({} sessions)\n", c.binding,
                     std::min(c.memory_cap, c.deadline_cap));
  return out;
}

}  // namespace metronome
