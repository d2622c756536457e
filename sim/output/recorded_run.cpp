#include "sim/output/recorded_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/config_error.h"
#include "base/rng.h"
#include "sim/admission/admission_policy.h"
#include "sim/admission/admission_record.h"
#include "sim/engine/call_span.h"
#include "sim/engine/frame_ledger.h"
#include "sim/engine/session.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome {
namespace {

// The driver writes times in microseconds; a release within this of its schedule is on it.
constexpr double kReleaseTolerance_s = 2e-6;

struct Caller {
  Time arrival;
  CallSpan call;
  std::vector<const RecordedRun::Frame*> frames;  // by frame index, as recorded
  bool admitted = false;
};

// Events at one instant: a hang-up first (its frame at that instant is no frame of it), then served
// frames, then arrivals, as the engine orders a departure before the step it would end.
enum class Kind : int { kDeparture = 0, kServed = 1, kArrival = 2 };
struct Event {
  Time t;
  Kind kind;
  int64_t caller;
  int64_t frame;
  bool operator<(const Event& o) const {
    if (t != o.t) return t < o.t;
    if (kind != o.kind) return kind < o.kind;
    if (caller != o.caller) return caller < o.caller;
    return frame < o.frame;
  }
};

}  // namespace

RunResult book_recorded_run(const Scenario& s, int64_t pool_blocks, const RecordedRun& r,
                            RunObserver* observer) {
  const Time horizon = from_seconds(s.horizon_s);
  const Time period = std::max<Time>(1, from_seconds(s.workload.frame_period_s));

  // The scenario's callers, drawn as the engine draws them (a rejected caller's length too).
  Rng arrival_rng(s.seed, "arrivals"), duration_rng(s.seed, "durations");
  auto arrivals = make_arrival_process(s.workload.arrival);
  auto durations = make_duration_distribution(s.workload.duration);
  std::vector<Caller> callers;
  while (auto t = arrivals->next(arrival_rng)) {
    if (*t > horizon) break;
    const double d = durations->sample(duration_rng);
    callers.push_back({*t, call_span(*t, d, horizon, period), {}, false});
  }

  for (const auto& f : r.frames) {
    // A recording may run past the scenario's horizon (booked with a shorter one, to read a
    // stretch of it): what was released after the horizon is no part of the run.
    if (from_seconds(f.release_s) > horizon) continue;
    if (f.session < 0 || f.session >= static_cast<int64_t>(callers.size())) {
      throw ConfigError(fmt::format(
          "{}: session {}: expected a caller of the scenario (0 to {}); not a recording of it",
          f.where, f.session, static_cast<int64_t>(callers.size()) - 1));
    }
    Caller& c = callers[static_cast<size_t>(f.session)];
    if (f.frame < 0 || f.frame >= c.call.frames) {
      throw ConfigError(fmt::format("{}: frame {} of session {}: expected 0 to {} (its call)",
                                    f.where, f.frame, f.session, c.call.frames - 1));
    }
    const double scheduled_s = to_seconds(c.arrival + f.frame * period);
    if (std::fabs(f.release_s - scheduled_s) > kReleaseTolerance_s) {
      throw ConfigError(fmt::format(
          "{}: release_s {:.6f} of session {} frame {}: expected {:.6f} (the scenario's arrival + "
          "frame x frame_period_s); not a recording of this scenario",
          f.where, f.release_s, f.session, f.frame, scheduled_s));
    }
    if (c.frames.size() <= static_cast<size_t>(f.frame)) c.frames.resize(f.frame + 1, nullptr);
    if (c.frames[f.frame]) {
      throw ConfigError(fmt::format("{}: session {} frame {} recorded twice (first at {})", f.where,
                                    f.session, f.frame, c.frames[f.frame]->where));
    }
    c.frames[f.frame] = &f;
    c.admitted = true;
  }

  std::vector<Event> events;
  for (size_t i = 0; i < callers.size(); ++i) {
    Caller& c = callers[i];
    const auto id = static_cast<int64_t>(i);
    events.push_back({c.arrival, Kind::kArrival, id, 0});
    if (!c.admitted) continue;
    // Every frame released before the hang-up and by the horizon is recorded, served or not.
    const Time last = std::min(c.call.end == kNever ? horizon : c.call.end - 1, horizon);
    const int64_t released = std::min(c.call.frames, (last - c.arrival) / period + 1);
    for (int64_t k = 0; k < released; ++k) {
      if (static_cast<size_t>(k) >= c.frames.size() || !c.frames[k]) {
        throw ConfigError(fmt::format(
            "{}: session {} frame {} (released at {:.6f} s) is missing; expected every frame "
            "released before the caller hung up and by the horizon",
            r.source, id, k, to_seconds(c.arrival + k * period)));
      }
    }
    if (static_cast<int64_t>(c.frames.size()) > released) {
      throw ConfigError(fmt::format(
          "{}: session {} frame {}: released after its hang-up or the "
          "horizon; expected {} frames",
          c.frames[released] ? c.frames[released]->where : r.source, id, released, released));
    }
    if (c.call.end <= horizon) events.push_back({c.call.end, Kind::kDeparture, id, 0});
    // A frame counts as served when its last token came by the horizon and while the caller was
    // on the line; frames are answered in order (a streaming session's are, by construction).
    for (int64_t k = 0; k < released; ++k) {
      const auto& done = c.frames[k]->done_s;
      if (!done) break;
      const Time t = from_seconds(*done);
      if (t > horizon || t > c.call.end) break;
      events.push_back({t, Kind::kServed, id, k});
    }
  }
  std::sort(events.begin(), events.end());

  RunResult result;
  const bool adaptive = s.admission.policy->control_loop() != nullptr;
  FrameLedger ledger(s, result, observer, false);
  AdmissionRecord admission(horizon);
  const int64_t first_cap = s.admission.policy->make_controller(s.workload.deadline())->cap();
  int64_t cap = first_cap;
  size_t next_control = 0;
  for (const auto& c : r.controls) {
    const Time t = from_seconds(c.t_s);
    if (t > horizon) break;
    admission.interval(t, cap, c.cap);
    cap = c.cap;
  }

  std::vector<Session> sessions(callers.size());
  int64_t live = 0;
  size_t gauge = 0;
  auto gauges = [&] {
    const Time sample_at = ledger.next_sample();
    // The engine's state at the sample instant, as the engine reported it at or before then.
    while (gauge < r.gauges.size() && from_seconds(r.gauges[gauge].t_s) <= sample_at) ++gauge;
    while (next_control < r.controls.size() &&
           from_seconds(r.controls[next_control].t_s) <= sample_at) {
      ++next_control;
    }
    EngineGauges g;
    if (gauge > 0) {
      const auto& m = r.gauges[gauge - 1];
      g.pool_fraction = m.kv_usage;
      g.pool_used = std::llround(m.kv_usage * static_cast<double>(pool_blocks));
      g.stalled = m.waiting;
      result.peak_pool_blocks = std::max(result.peak_pool_blocks, g.pool_used);
      result.final_pool_blocks = g.pool_used;
    }
    g.live = live;
    g.cap = next_control > 0 ? r.controls[next_control - 1].cap : first_cap;
    if (next_control > 0) g.signal_s = r.controls[next_control - 1].signal_s;
    return g;
  };

  for (const Event& e : events) {
    ledger.sample_until(e.t, sessions, gauges);
    Caller& c = callers[static_cast<size_t>(e.caller)];
    Session& x = sessions[static_cast<size_t>(e.caller)];
    switch (e.kind) {
      case Kind::kArrival:
        ++result.sessions_arrived;
        if (!c.admitted) {
          x.state = Session::State::kGone;
          ++result.sessions_rejected;
          ledger.note_rejected();
          break;
        }
        x.arrival = c.arrival;
        x.end = c.call.end;
        x.frames_total = c.call.frames;
        x.next_release = c.arrival;
        ++live;
        result.peak_live_sessions = std::max(result.peak_live_sessions, live);
        break;
      case Kind::kServed:
        ledger.serve(c.arrival + e.frame * period,
                     from_seconds(*c.frames[e.frame]->done_s) - (c.arrival + e.frame * period), 1);
        ++x.next_frame;
        x.next_release += period;
        break;
      case Kind::kDeparture:
        x.state = Session::State::kGone;
        ledger.depart(x);
        --live;
        ++result.sessions_departed;
        break;
    }
  }
  ledger.finish(sessions, gauges);
  result.end_s = to_seconds(horizon);

  for (const auto& st : r.steps) {
    if (st.start_s < 0 || st.start_s > to_seconds(horizon)) continue;  // warm-up, after the run
    if (st.scheduled) {
      ++result.engine_steps;
      result.busy_s += st.end_s - st.start_s;
    }
    if (st.refused && !result.first_stall_s) result.first_stall_s = st.start_s;
    if (st.preempted > 0) {
      result.preemptions += st.preempted;
      if (!result.first_preempt_s) result.first_preempt_s = st.start_s;
    }
  }
  admission.summarise(result.admission, {cap, adaptive, first_cap, live, &ledger.last_half_live(),
                                         ledger.missed_deadlines(), result.first_stall_s});
  return result;
}

}  // namespace metronome
