// The books of a run's frames, kept the same way for both schedulers: every served frame's latency
// (one call per frame, histogram adds only), the frames a caller never got (counted when the caller
// leaves or the run ends), the time series sampled at each sample_period_s and the silent-frame
// count the admission controller reads at each control instant.
//
// Accounting is by deadline, so that a frame released just before a sample boundary and served just
// after it is not miscounted: a frame is due in the interval holding its silence deadline (release
// + silence_after_s), and silent in the interval where that deadline passed unanswered; a frame
// still within its deadline at the horizon, unanswered, is not counted at all (not late yet). The
// serving layer pads a frame unanswered by silence_after_s with silence, so the reported latency of
// such a frame is silence_after_s; its true latency is its real one, or censored if it never came.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "base/time.h"
#include "sim/admission/admission_controller.h"
#include "sim/config/scenario.h"
#include "sim/engine/session.h"
#include "sim/output/latency_histogram.h"
#include "sim/output/run_observer.h"
#include "sim/output/run_result.h"

namespace metronome {

// What the time series reads from the engine at a sample instant.
struct EngineGauges {
  int64_t pool_used = 0;
  double pool_fraction = 0;
  int64_t live = 0;
  int64_t stalled = 0;
  int64_t cap = 0;
  double signal_s = std::numeric_limits<double>::quiet_NaN();  // the controller's last read
};

// The p-quantile of a distribution held as value -> instants (a last half's live sessions or
// caps): the smallest value whose cumulative count reaches p x n. `m` must not be empty.
double counted_quantile(const std::map<int64_t, int64_t>& m, double p);

class FrameLedger {
 public:
  // `result` and `observer` (which may be null) must outlive the ledger.
  FrameLedger(const Scenario& s, RunResult& result, RunObserver* observer, bool control_on);

  // The hot path: one frame served `latency` after its release, for each of `count` members;
  // `scheduled` is its release as the due count has it (arrival + frame x period: jitter delays
  // the release, not the frame's place in the schedule).
  [[gnu::always_inline]] void serve(Time scheduled, Time latency, int64_t count) {
    // Nearly every frame is one caller's, answered by its deadline and by silence_after_s, in a run
    // without an observer or a control loop and an interval where no frame came later: it is on
    // time and in the answered histogram, and nothing else counts it (usual_limit_). Otherwise a
    // single caller's frame still goes inline, with the count a constant 1.
    if (count == 1 && latency <= usual_limit_) [[likely]] {
      interval_answered_.add_bin(latency_bin(latency));
      ++interval_.frames_on_time;
    } else if (count == 1) {
      serve_each(scheduled, latency, 1);
    } else {
      serve_cohort(scheduled, latency, count);
    }
  }
  // serve(release, end - release, 1) for frames of single callers all answered at `end`, the first
  // released at `first_release` and the others in ascending release order: `each(serve)` calls
  // serve(release) for each, at least once. When the first (the latest) is usual, so is every one,
  // and a frame costs its bin alone.
  template <class Each>
  void serve_ascending(Time end, Time first_release, Each&& each) {
    if (end - first_release <= usual_limit_) {
      int64_t k = 0;
      {
        LatencyHistogram::Descending run(interval_answered_, latency_bin(end - first_release));
        each([&](Time release) {
          run.add_bin(latency_bin(end - release));
          ++k;
        });
      }
      interval_.frames_on_time += k;
    } else {
      each([&](Time release) { serve(release, end - release, 1); });
    }
  }
  // LatencyHistogram::bin_of(to_seconds(latency)) with one test: a latency of 1 ns or more is at
  // least 2^-30 s, and even the largest Time is under 2^34 s (about 9.2e9 s).
  static int latency_bin(Time latency) {
    static_assert(to_seconds(1) >= LatencyHistogram::kLowest);
    static_assert(to_seconds(std::numeric_limits<Time>::max()) < LatencyHistogram::kHighest);
    return latency < 1 ? 0 : LatencyHistogram::bin_in_range(to_seconds(latency));
  }
  void note_rejected() { ++interval_rejected_; }
  // A caller hangs up: its frames not served by then are silent.
  void depart(const Session& s);

  // The instant of the next sample (the one a gauges() call inside sample_until is read for).
  Time next_sample() const { return next_sample_; }
  // Whether a sample is due by `t` (sample_until would take one).
  bool sample_due(Time t) const { return next_sample_ <= t && next_sample_ <= horizon_; }
  // Takes every sample due by `t`; `gauges()` gives the engine's state at the sample.
  template <class Gauges>
  void sample_until(Time t, const std::vector<Session>& sessions, Gauges&& gauges) {
    while (sample_due(t)) take_sample(sessions, gauges());
  }
  // One control interval ends at `now`: adds the frames padded with silence since the last one to
  // the control histogram, which the caller reads and then clears.
  LatencyHistogram& close_control_interval(Time now, const std::vector<Session>& sessions,
                                           bool true_signal);
  // The last samples and the frames still owed at the horizon.
  template <class Gauges>
  void finish(const std::vector<Session>& sessions, Gauges&& gauges) {
    sample_until(horizon_, sessions, gauges);
    fold_interval();  // frames served after the last sample
    for (const Session& s : sessions) {
      // A frame whose silence deadline is past the horizon and that has no output yet is not
      // late: it may still come in time, so it is not due (the time series never counts it).
      if (s.state != Session::State::kGone) {
        count_unserved(s, std::max(s.next_frame, frames_due_by(s, horizon_ - silence_after_)));
      }
    }
  }

  // Live sessions at the samples of the last half of the horizon (value -> samples), and the frames
  // due and on time there: the steady state N* and the missed-deadline flag.
  const std::map<int64_t, int64_t>& last_half_live() const { return last_half_live_; }
  bool missed_deadlines() const {
    return 100 * (last_half_due_ - last_half_on_time_) > last_half_due_;
  }

 private:
  [[gnu::always_inline]] void serve_each(Time scheduled, Time latency, int64_t count) {
    if (observer_) by_deadline(scheduled + silence_after_, latency, count);
    const int bin = latency_bin(latency);
    if (latency <= on_time_by_) interval_.frames_on_time += count;
    if (latency <= silence_after_) {
      interval_answered_.add_bin(bin, count);
      if (true_split_) interval_true_.add_bin(bin, count);
      if (control_on_) control_hist_.add_bin(bin, count);
      if (latency > deadline_) {
        result_.frames_reported_late += count;
        interval_answered_late_ += count;
      }
    } else {
      split_true();
      interval_true_.add_bin(bin, count);
      late_or_lost_ += count;
      interval_late_ += count;
      if (silence_after_ > deadline_) result_.frames_reported_late += count;
    }
  }

  [[gnu::noinline]] void serve_cohort(Time scheduled, Time latency, int64_t count) {
    serve_each(scheduled, latency, count);
  }
  void take_sample(const std::vector<Session>& sessions, const EngineGauges& g);
  void count_unserved(const Session& s, int64_t due_each);
  int64_t frames_due_by(const Session& s, Time t) const;
  int64_t silent_by(const std::vector<Session>& sessions, Time released_by, int64_t* due,
                    Time owed_after = 0, int64_t* owed = nullptr) const;
  void fold_interval();
  void by_deadline(Time silence_deadline, Time latency, int64_t count);

  RunResult& result_;
  RunObserver* observer_;
  Time period_, deadline_, silence_after_, horizon_, sample_period_;
  // A frame is on time when answered by its deadline and not padded with silence before then (a
  // serving layer that pads before the deadline has already played silence for it).
  Time on_time_by_;
  int64_t n_out_;
  bool control_on_;

  // Since the start: frames due of departed callers, frames served after silence_after_s or never
  // (departed callers).
  int64_t departed_due_ = 0;
  int64_t late_or_lost_ = 0;
  // The interval that ends at next_sample_.
  Time next_sample_;
  int64_t due_at_last_sample_ = 0;
  int64_t silent_at_last_sample_ = 0;
  Sample interval_;
  LatencyHistogram interval_answered_;  // reported latency of frames answered in time
  // True latency of the interval's frames. Until a frame comes after silence_after_s it would hold
  // exactly what interval_answered_ holds (the same adds in the same order), so it is only filled
  // from then on (split_true): one histogram add per frame on the usual path.
  LatencyHistogram interval_true_;
  bool true_split_ = false;
  void split_true() {
    if (true_split_) return;
    interval_true_.merge(interval_answered_);  // into an empty one: an exact copy
    true_split_ = true;
    set_usual_limit();
  }
  // The latest latency of a usual frame (serve); -1 while no frame can be usual.
  Time usual_limit_ = -1;
  void set_usual_limit() {
    usual_limit_ = observer_ || control_on_ || true_split_ ? -1 : on_time_by_;
  }
  const LatencyHistogram& interval_true() const {
    return true_split_ ? interval_true_ : interval_answered_;
  }
  int64_t interval_late_ = 0;           // frames served after silence_after_s in the interval
  int64_t interval_answered_late_ = 0;  // answered within silence_after_s, after the deadline
  // Every frame served is answered in time or late, so its count needs no add of its own.
  int64_t interval_served() const { return interval_answered_.count() + interval_late_; }
  int64_t interval_rejected_ = 0;
  // The time series counts a frame answered in time in the interval holding its silence deadline,
  // where it is due, so an interval never shows more frames served than due: per interval from the
  // current one on (a ring; a deadline is at most silence_after_s ahead), answered and on time.
  // A departing caller's last frames are due, and silent if unanswered, in the intervals of their
  // deadlines too: counted there (ahead_due_, ahead_lost_), and held back until then (pending_*).
  std::vector<int64_t> ahead_served_, ahead_on_time_, ahead_due_, ahead_lost_;
  size_t ahead_head_ = 0;
  int64_t pending_due_ = 0, pending_lost_ = 0;
  int64_t series_due_at_last_ = 0, series_silent_at_last_ = 0;
  size_t ahead_of(Time silence_deadline) const;
  // The control interval: frames answered within silence_after_s, then the padded ones.
  LatencyHistogram control_hist_;
  int64_t silent_at_last_control_ = 0;
  std::map<int64_t, int64_t> last_half_live_;
  int64_t last_half_due_ = 0, last_half_on_time_ = 0;
};

}  // namespace metronome
