#include "sim/frame_ledger.h"

#include <algorithm>

namespace metronome {

FrameLedger::FrameLedger(const Scenario& s, RunResult& result, RunObserver* observer,
                         bool control_on)
    : result_(result),
      observer_(observer),
      period_(std::max<Time>(1, from_seconds(s.workload.frame_period_s))),
      deadline_(from_seconds(s.workload.deadline())),
      silence_after_(from_seconds(s.engine.silence_after_s.value())),
      horizon_(from_seconds(s.horizon_s)),
      sample_period_(std::max<Time>(1, from_seconds(s.output.sample_period_s))),
      n_out_(s.workload.output_tokens_per_frame),
      control_on_(control_on),
      next_sample_(sample_period_) {}

void FrameLedger::depart(const Session& s) {
  count_unserved(s, s.frames_total);
  departed_due_ += s.frames_total * s.count;
  late_or_lost_ += std::max<int64_t>(0, s.frames_total - s.next_frame) * s.count;
}

void FrameLedger::count_unserved(const Session& s, int64_t due_each) {
  const int64_t due = due_each * s.count;
  const int64_t unserved = std::max<int64_t>(0, due_each - s.next_frame) * s.count;
  result_.frames_due += due;
  result_.frames_silent += unserved;
  result_.true_latency.add_censored(unserved);
  // The serving layer answered each of them with silence at silence_after_s.
  if (unserved > 0) {
    result_.reported_latency.add(to_seconds(silence_after_), unserved);
    if (silence_after_ > deadline_) result_.frames_reported_late += unserved;
  }
}

int64_t FrameLedger::frames_due_by(const Session& s, Time t) const {
  if (t < s.arrival) return 0;
  return std::min(s.frames_total, (t - s.arrival) / period_ + 1);
}

// Frames whose silence deadline (release + silence_after_s) passed by `released_by +
// silence_after_s` without output in time, since the start; `due` gets the frames due by then.
// O(sessions), once per sample or control instant.
int64_t FrameLedger::silent_by(const std::vector<Session>& sessions, Time released_by,
                               int64_t* due) const {
  int64_t d_total = departed_due_;
  int64_t silent = late_or_lost_;
  for (const Session& s : sessions) {
    if (s.state == Session::State::kGone) continue;
    const int64_t d = frames_due_by(s, released_by);
    d_total += d * s.count;
    silent += std::max<int64_t>(0, d - s.next_frame) * s.count;
  }
  if (due) *due = d_total;
  return silent;
}

void FrameLedger::take_sample(const std::vector<Session>& sessions, const EngineGauges& g) {
  const Time at = next_sample_;
  int64_t due = 0;
  const int64_t silent = silent_by(sessions, at - silence_after_, &due);
  if (observer_) {
    Sample& x = interval_;
    x.t_s = to_seconds(at);
    x.pool_used_blocks = g.pool_used;
    x.pool_fraction = g.pool_fraction;
    x.live_sessions = g.live;
    x.stalled_sessions = g.stalled;
    x.frames_due = std::max<int64_t>(0, due - due_at_last_sample_);
    const int64_t padded = std::max<int64_t>(0, silent - silent_at_last_sample_);
    fill_interval_stats(x, interval_answered_, interval_true_, padded, to_seconds(silence_after_),
                        to_seconds(deadline_));
    x.admission_cap = g.cap == kNoCap ? -1 : g.cap;
    x.sessions_rejected = interval_rejected_;
    x.admission_signal_s = g.signal_s;
    observer_->on_sample(x);
  }
  if (2 * at >= horizon_) {
    ++last_half_live_[g.live];
    last_half_due_ += std::max<int64_t>(0, due - due_at_last_sample_);
    last_half_on_time_ += interval_.frames_on_time;
    result_.steady_reported_latency.merge(interval_answered_);
    if (interval_late_ > 0) {
      result_.steady_reported_latency.add(to_seconds(silence_after_), interval_late_);
    }
  }
  due_at_last_sample_ = due;
  silent_at_last_sample_ = silent;
  fold_interval();
  next_sample_ += sample_period_;
}

void FrameLedger::fold_interval() {
  result_.true_latency.merge(interval_true_);
  result_.reported_latency.merge(interval_answered_);
  if (interval_late_ > 0) result_.reported_latency.add(to_seconds(silence_after_), interval_late_);
  result_.frames_served += interval_.frames_served;
  result_.frames_on_time += interval_.frames_on_time;
  result_.frames_silent += interval_late_;
  result_.tokens_produced += interval_.tokens_produced;
  interval_ = Sample{};
  interval_answered_.clear();
  interval_true_.clear();
  interval_late_ = 0;
  interval_rejected_ = 0;
}

// The signal is over the frames answered within silence_after_s in the interval plus the frames
// padded with silence in it (their silence deadline passed unanswered): at silence_after_s in the
// reported view, censored (+inf) in the true.
LatencyHistogram& FrameLedger::close_control_interval(Time now,
                                                      const std::vector<Session>& sessions,
                                                      bool true_signal) {
  const int64_t silent = silent_by(sessions, now - silence_after_, nullptr);
  const int64_t padded = std::max<int64_t>(0, silent - silent_at_last_control_);
  silent_at_last_control_ = silent;
  if (padded > 0) {
    if (true_signal) {
      control_hist_.add_censored(padded);
    } else {
      control_hist_.add(to_seconds(silence_after_), padded);
    }
  }
  return control_hist_;
}

}  // namespace metronome
