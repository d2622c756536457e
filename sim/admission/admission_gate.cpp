#include "sim/admission/admission_gate.h"

#include <algorithm>
#include <cmath>

#include "sim/admission/settled_forecast.h"
#include "sim/closed_form/service_rate.h"
#include "sim/pool/pool_sizing.h"

namespace metronome {

bool memory_guard_on(const Scenario& s) {
  // The guard needs a bound on each session's blocks: bounded KV has one; unbounded KV has one
  // only when call lengths are known at admission (fixed durations).
  const bool boundable = s.kv_policy.bounded() || s.workload.duration.fixed_s().has_value();
  return s.admission.memory_guard == "on" ||
         (s.admission.memory_guard == "auto" && s.admission.policy->limits() && boundable);
}

AdmissionGate::AdmissionGate(const Scenario& s, const FrameRule& rule, const CostModel& cost,
                             int64_t pool_blocks, Time period, Time horizon, bool forecast)
    : scenario_(s),
      cost_(cost),
      rule_(rule),
      pool_blocks_(pool_blocks),
      period_(period),
      horizon_(horizon),
      forecast_(forecast),
      controller_(s.admission.policy->make_controller(s.workload.deadline())),
      adaptive_(controller_->adaptive()),
      true_signal_(s.admission.control_loop().signal == "true"),
      control_period_(std::max<Time>(1, from_seconds(s.admission.control_loop().interval_s))),
      record_(horizon) {
  memory_guard_ = memory_guard_on(s);
  if (s.kv_policy.bounded()) window_reserve_ = max_blocks_per_session(s);
  if (memory_guard_ && window_reserve_ > 0) memory_cap_ = pool_blocks_ / window_reserve_;
  if (s.admission.join == "spread") spread_.emplace(period_);
}

AdmissionGate::Entry AdmissionGate::admit(Time now, double duration_s, int64_t live) {
  if (live >= cap()) return {Verdict::kCapped};
  Entry e{Verdict::kAdmitted};
  // The caller's frame clock starts now, or later where it spreads the live callers' phases; the
  // call lasts its drawn length from then.
  e.start = spread_ ? spread_->place(now) : now;
  // The call's length is drawn now; its frames and worst-case blocks follow from it.
  e.call = call_span(e.start, duration_s, horizon_, period_);
  if (const auto cap = rule_.residency.cap_frames(); cap) {
    e.context_capped = cap_call(e.call, e.start, *cap, horizon_, period_);
  }
  if (memory_guard_) {
    // The whole call's, also where it outlives the run: a guard cannot know where a run ends
    // (call_span's frames stop just past the horizon, and its length past it is not converted).
    int64_t frames = e.call.frames;
    if (e.call.end == kNever) {
      frames = static_cast<int64_t>(std::min(1e15, std::ceil(duration_s / to_seconds(period_))));
      if (const auto cap = rule_.residency.cap_frames()) frames = std::min(frames, *cap);
    }
    e.reserve = reserve_for(std::max<int64_t>(1, frames));
    if (!reserve_fits(e.reserve)) {
      e.verdict = Verdict::kNoMemory;
      return e;
    }
    reserved_ += e.reserve;
  }
  if (spread_) {
    spread_->add(e.start, 1);
    join_delay_sum_ += e.start - now;
    join_delay_max_ = std::max(join_delay_max_, e.start - now);
  }
  return e;
}

void AdmissionGate::depart(const Session& s) {
  reserved_ -= s.reserve * s.count;
  if (spread_) spread_->remove(s.arrival, s.count);
}

bool AdmissionGate::turns_away_any_caller(int64_t live) const {
  return live >= cap() || (memory_guard_ && window_reserve_ > 0 && !reserve_fits(window_reserve_));
}

// The worst-case blocks of a session of `frames` frames.
int64_t AdmissionGate::reserve_for(int64_t frames) const {
  return rule_.residency.most_blocks_through(frames);
}

// The signal is the configured quantile of the interval's frames
// (FrameLedger::close_control_interval).
void AdmissionGate::control(Time now, const LatencyHistogram& hist, int64_t live,
                            const std::vector<Session>& sessions) {
  ControlSignal sig;
  sig.now = now;
  sig.frames = hist.total();
  sig.latency_s = hist.percentile(scenario_.admission.control_loop().quantile);
  sig.live = live;
  sig.forecast = [this, &sessions, live, observed = sig.latency_s] {
    return settled_latency(observed, live, sessions);
  };
  last_signal_s_ = sig.latency_s;
  const int64_t before = cap();
  controller_->on_interval(sig);
  record_.interval(now, before, cap());
}

void AdmissionGate::summarise(RunResult& r, const FrameLedger& ledger, int64_t live) const {
  AdmissionSummary& a = r.admission;
  if (spread_) {
    a.join_spread = true;
    const int64_t admitted = r.sessions_arrived - r.sessions_rejected;
    if (admitted > 0) {
      a.join_delay_mean_ms = 1e3 * to_seconds(join_delay_sum_) / static_cast<double>(admitted);
    }
    a.join_delay_max_ms = 1e3 * to_seconds(join_delay_max_);
  }
  record_.summarise(a, {cap(), adaptive_, scenario_.admission.control_loop().initial_cap, live,
                        &ledger.last_half_live(), ledger.missed_deadlines(), r.first_stall_s});
  a.memory_guard = memory_guard_;
  a.memory_cap = memory_cap_;
}

// The controller's forecast (sim/admission/settled_forecast.h): the observed latency scaled by how
// much the frame scheduler's periodic regime slows once every context has settled at S + W and the
// cap has filled with one more increase, newcomers spread evenly over the period (or where spread
// joins will put them). The cap, not the live count: arrivals fill the cap within an interval or
// two, so a forecast for live + increase lets the cap run ahead of what it has judged. An
// observation above the model's raises the forecast; one below it (a quiet interval) cannot lower
// it. Unbounded contexts never settle: the observation stands.
double AdmissionGate::settled_latency(double observed, int64_t live,
                                      const std::vector<Session>& sessions) const {
  if (!rule_.residency.is_window() || rule_.w.unbounded() || !std::isfinite(observed) ||
      live == 0 || !forecast_)
    return observed;
  // Both replays take their callers in phase order: sorted once here (a sort in each replay was
  // most of a large cap's forecast), the newcomers merged in behind the callers at their phases.
  std::vector<ForecastCaller> now;
  const int64_t settled_cached = rule_.cached_cap;  // every settled caller reads S + W keys
  for (const Session& s : sessions) {
    if (s.state == Session::State::kGone) continue;
    now.push_back({s.next_release % period_, s.count, rule_.cached(s.ctx)});
  }
  std::stable_sort(now.begin(), now.end(), earlier_phase);
  std::vector<ForecastCaller> settled = now;
  for (ForecastCaller& c : settled) c.cached = settled_cached;
  const int64_t c = cap();
  const int64_t admitted =
      (c == kNoCap ? live : std::max(live, c)) +
      static_cast<int64_t>(std::ceil(scenario_.admission.policy->forecast_increase()));
  // The memory guard will refuse callers past the memory cap, so none of them is forecast.
  const int64_t newcomers =
      std::max<int64_t>(0, (memory_cap_ ? std::min(admitted, *memory_cap_) : admitted) - live);
  if (spread_) {
    // Newcomers join where the engine will put them.
    PhaseSpread spread = *spread_;
    for (int64_t j = 0; j < newcomers; ++j) {
      const Time start = spread.target();
      spread.add(start, 1);
      settled.push_back({start, 1, settled_cached});
    }
  } else {
    for (int64_t j = 0; j < newcomers; ++j) {
      settled.push_back({(2 * j + 1) * period_ / (2 * newcomers), 1, settled_cached});
    }
  }
  const auto joined = settled.begin() + static_cast<ptrdiff_t>(now.size());
  std::stable_sort(joined, settled.end(), earlier_phase);
  std::inplace_merge(settled.begin(), joined, settled.end(), earlier_phase);
  // Past full-step pace the backlog grows every period: the replay's few periods barely show it
  // near the line (1010 Omni callers read about 500 ms there and missed 40% of frames over 200 s).
  if (full_step_utilisation(scenario_, live + newcomers, settled_cached, cost_) > 1) {
    return std::numeric_limits<double>::infinity();
  }
  const ForecastShape shape{period_, rule_.n_in, rule_.n_out,
                            scenario_.engine.max_sessions_per_step, rule_.w};
  const double q = scenario_.admission.control_loop().quantile;
  const double base = periodic_latency_quantile(std::move(now), shape, cost_, q);
  if (!(base > 0)) return observed;
  const double st = periodic_latency_quantile(std::move(settled), shape, cost_, q);
  // An increase cannot be taken back (callers are never evicted): the worse of the model's own
  // settled latency and the observation scaled by the model's ratio, so that a lucky interval's
  // low reading does not admit callers the model already sees crossing the bound.
  return st * std::max(1.0, observed / base);
}

}  // namespace metronome
