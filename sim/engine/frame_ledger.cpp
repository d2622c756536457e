#include "sim/engine/frame_ledger.h"

#include <algorithm>
#include <cmath>

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
      on_time_by_(std::min(deadline_, silence_after_)),
      n_out_(s.workload.output_tokens_per_frame),
      control_on_(control_on),
      next_sample_(sample_period_),
      // One slot per interval a deadline can fall in: at most silence_after_s ahead, and never
      // past the horizon's interval (a later deadline lands in the last slot, which no sample of
      // the run reaches), so silence_after_s = 1e9 s costs the horizon's intervals, not 1e10.
      ahead_served_(static_cast<size_t>(std::min(silence_after_, horizon_) / sample_period_ + 3),
                    0),
      ahead_on_time_(ahead_served_.size(), 0),
      ahead_due_(ahead_served_.size(), 0),
      ahead_lost_(ahead_served_.size(), 0) {
  set_usual_limit();
}

// The ring slot of the interval holding a deadline at or after the current interval's start.
size_t FrameLedger::ahead_of(Time silence_deadline) const {
  const Time past = silence_deadline - next_sample_;
  const size_t ahead =
      past <= 0 ? 0 : static_cast<size_t>((past + sample_period_ - 1) / sample_period_);
  return (ahead_head_ + std::min(ahead, ahead_served_.size() - 1)) % ahead_served_.size();
}

void FrameLedger::by_deadline(Time silence_deadline, Time latency, int64_t count) {
  // A deadline in an interval already sampled: that sample counted the frame silent.
  if (silence_deadline <= next_sample_ - sample_period_) return;
  const size_t k = ahead_of(silence_deadline);
  ahead_served_[k] += count;
  if (latency <= on_time_by_) ahead_on_time_[k] += count;
}

double counted_quantile(const std::map<int64_t, int64_t>& m, double p) {
  int64_t n = 0;
  for (const auto& [v, k] : m) n += k;
  const int64_t rank =
      std::clamp<int64_t>(static_cast<int64_t>(std::ceil(p * static_cast<double>(n))), 1, n);
  int64_t seen = 0;
  for (const auto& [v, k] : m) {
    seen += k;
    if (seen >= rank) return static_cast<double>(v);
  }
  return static_cast<double>(m.rbegin()->first);
}

void FrameLedger::depart(const Session& s) {
  count_unserved(s, s.frames_total);
  if (observer_) {
    for (int64_t f = s.frames_total - 1; f >= 0; --f) {
      const Time d = s.arrival + f * period_ + silence_after_;
      if (d <= next_sample_) break;
      const size_t k = ahead_of(d);
      ahead_due_[k] += s.count;
      pending_due_ += s.count;
      if (f >= s.next_frame) {
        ahead_lost_[k] += s.count;
        pending_lost_ += s.count;
      }
    }
  }
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
// silence_after_s` without output in time, since the start; `due` gets the frames due by then, and
// `owed`, where given, those released after `owed_after` (and by released_by) still without output:
// the ones whose silence deadline passed since then, unanswered. O(sessions), once per sample or
// control instant.
int64_t FrameLedger::silent_by(const std::vector<Session>& sessions, Time released_by, int64_t* due,
                               Time owed_after, int64_t* owed) const {
  int64_t d_total = departed_due_;
  int64_t silent = late_or_lost_;
  int64_t owed_total = 0;
  for (const Session& s : sessions) {
    if (s.state == Session::State::kGone) continue;
    const int64_t d = frames_due_by(s, released_by);
    d_total += d * s.count;
    silent += std::max<int64_t>(0, d - s.next_frame) * s.count;
    if (owed) {
      const int64_t from = std::max(s.next_frame, frames_due_by(s, owed_after));
      owed_total += std::max<int64_t>(0, d - from) * s.count;
    }
  }
  if (due) *due = d_total;
  if (owed) *owed = owed_total;
  return silent;
}

void FrameLedger::take_sample(const std::vector<Session>& sessions, const EngineGauges& g) {
  const Time at = next_sample_;
  int64_t due = 0, owed = 0;  // owed: the time series' unanswered frames of this interval
  const int64_t silent =
      silent_by(sessions, at - silence_after_, &due, at - sample_period_ - silence_after_,
                observer_ ? &owed : nullptr);
  if (observer_) {
    // A copy: the run's totals fold the interval as served, the time series reads by deadline
    // (interval_.frames_served stays 0: the served count is interval_served()).
    Sample x = interval_;
    x.tokens_produced = n_out_ * interval_served();  // every frame served produced n_out
    x.frames_served = ahead_served_[ahead_head_];
    x.frames_on_time = ahead_on_time_[ahead_head_];
    ahead_served_[ahead_head_] = ahead_on_time_[ahead_head_] = 0;
    x.t_s = to_seconds(at);
    x.pool_used_blocks = g.pool_used;
    x.pool_fraction = g.pool_fraction;
    x.live_sessions = g.live;
    x.stalled_sessions = g.stalled;
    pending_due_ -= ahead_due_[ahead_head_];
    pending_lost_ -= ahead_lost_[ahead_head_];
    ahead_due_[ahead_head_] = ahead_lost_[ahead_head_] = 0;
    ahead_head_ = (ahead_head_ + 1) % ahead_served_.size();
    const int64_t series_due = due - pending_due_, series_silent = silent - pending_lost_;
    x.frames_due = std::max<int64_t>(0, series_due - series_due_at_last_);
    const int64_t padded = std::max<int64_t>(0, series_silent - series_silent_at_last_);
    series_due_at_last_ = series_due;
    series_silent_at_last_ = series_silent;
    // The true latency of the interval's frames: those served in it, and those its silence
    // deadlines passed with no output by its end, censored (a departed caller's are in neither).
    LatencyHistogram truth = interval_true();
    truth.add_censored(owed);
    fill_interval_stats(x, interval_answered_, truth, padded, interval_answered_late_,
                        to_seconds(silence_after_), to_seconds(deadline_));
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
    result_.steady_frames_due += std::max<int64_t>(0, due - due_at_last_sample_);
    result_.steady_frames_silent += interval_late_;
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
  result_.true_latency.merge(interval_true());
  result_.reported_latency.merge(interval_answered_);
  if (interval_late_ > 0) result_.reported_latency.add(to_seconds(silence_after_), interval_late_);
  result_.frames_served += interval_served();
  result_.frames_on_time += interval_.frames_on_time;
  result_.frames_silent += interval_late_;
  result_.tokens_produced += n_out_ * interval_served();
  interval_ = Sample{};
  interval_answered_.clear();
  interval_true_.clear();
  true_split_ = false;
  set_usual_limit();
  interval_late_ = 0;
  interval_answered_late_ = 0;
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
