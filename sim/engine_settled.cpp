// The frame scheduler's settled regime: an exact shortcut through the steady state.
//
// Once every live caller is a usual single caller (Session::usual_single) past its settled context
// (kv::settled_from), nothing in a step depends on more than its callers' contexts: a frame's new
// and freed blocks are kv's closed forms, its passes FrameRule::add_settled_run (a window's price
// depends on the number of callers alone), and each served caller goes back to the queue's back,
// one period later. The ready queue then only turns, so the engine runs its steps over a ring of
// the callers' per-frame state in service order (Engine::conveyor_), without tickets, slots or
// events, until the next event in the queue (arrival, departure, control instant, or a stale wake)
// or the horizon. It takes each sample in place, as the run loop would, and hands back the state
// the general path would have reached: sessions, the ready queue and, for a step that ends at or
// after that event, the step in flight. A step it cannot take exactly as the general path would
// (short of blocks, a caller's last frame, a caller that would not go to the queue's back) goes
// back to the general path before anything changes. Tests run every scenario with it and without
// (tests/sim/settled_run_test.cpp).
#include <algorithm>

#include "sim/cost/step_time.h"
#include "sim/engine.h"

namespace metronome {

// Builds the ring from the ready queue if every live caller qualifies; tells when to look again
// if one falls short of its settled context.
bool Engine::enter_settled(Time now) {
  static_assert(sizeof(SettledCaller) == 16);
  if (live_ == 0 || stalled_ > 0 || !ready_.heap_empty()) return false;
  if (ready_.ring_size() < static_cast<size_t>(live_)) {
    // A cohort (callers who arrived at one instant) or a caller past its last frame: a period
    // passes before either can change.
    settled_try_at_ = now + period_;
    return false;
  }
  conveyor_.clear();
  conveyor_ids_.clear();
  // Exactly the callers' room (a vector that doubles would keep up to twice it).
  conveyor_.reserve(static_cast<size_t>(live_));
  conveyor_ids_.reserve(static_cast<size_t>(live_));
  conveyor_last_ = kNever;
  for (size_t i = 0; i < ready_.ring_size(); ++i) {
    const Ticket& t = ready_.run_at(i);
    const Session& s = sessions_[t.id];
    if (s.incarnation != t.incarnation) continue;  // its caller left: the general path skips it
    if (!s.usual_single() || s.ctx < rule_.settled) {
      // The caller settles after this many more frames at the earliest; other reasons pass with
      // the next frame or the next event.
      const int64_t short_by = rule_.settled - s.ctx;
      const int64_t n = rule_.growth.per_frame;
      const int64_t frames = short_by > 0 && n > 0 ? kv::ceil_div(short_by, n) : 1;
      settled_try_at_ = frames > (horizon_ - now) / period_ ? horizon_ + 1 : now + frames * period_;
      return false;
    }
    conveyor_.push_back({t.release, s.ctx});
    conveyor_ids_.push_back(t.id);
    conveyor_last_ = std::min(conveyor_last_, s.arrival + (s.frames_total - 1) * period_);
  }
  if (conveyor_.size() != static_cast<size_t>(live_)) {  // a live caller is not queued
    settled_try_at_ = now + period_;
    return false;
  }
  conveyor_head_ = 0;
  return true;
}

// Steps from `now` (the engine idle, every event of the instant handled) for as long as the
// settled regime lasts. True: the engine's state is handed back and its next step or wake is in
// the event queue. False: the general path takes the step at `now`, which the regime may have
// moved on to a later instant of the same kind.
bool Engine::run_settled(Time& now) {
  if (!enter_settled(now)) return false;
  const size_t n = conveyor_.size();
  const size_t cap = static_cast<size_t>(std::min<int64_t>(max_batch_, static_cast<int64_t>(n)));
  // Only a turned-away caller's next arrival is pushed while the regime runs: the queue's first
  // event stays the first otherwise. An arrival a fleet may place (external_at_) counts as one.
  auto first_event = [&] {
    return std::min(events_.empty() ? kNever : events_.top().time, external_at_);
  };
  Time events_at = first_event();
  // A caller turned away changes nothing the ring holds, so its arrival is taken in place rather
  // than ending the regime: with demand above the cap arrivals come every few steps, and each
  // exit and re-entry rewrites every caller (most of a windowed AIMD run's time at the cap).
  auto take_turned_away = [&](Time before) {
    while (events_at < before && events_at != external_at_ && events_.top().time == events_at &&
           events_.top().kind() == EventKind::kArrival && gate_.turns_away_any_caller(live_)) {
      sample_settled(events_at);
      events_.pop();
      on_arrival(events_at);
      events_at = first_event();
    }
  };
  const int64_t n_kv = rule_.growth.per_frame;  // every caller is past its first frame
  const kv::BlockSize bs = block_size_;
  const kv::Window w = rule_.w;  // a window: the regime runs only where the policy is one
  const Time period = period_;
  SettledCaller* const ring = conveyor_.data();
  Time t = now;
  for (;;) {
    // The step at t: the ready callers from the head, up to the batch cap, in at most two runs of
    // the ring.
    size_t k = 0;
    int64_t need = 0, sum_ctx = 0;
    for (size_t from = conveyor_head_;;) {
      const size_t to = std::min(n, from + (cap - k));
      size_t i = from;
      for (; i < to && ring[i].release <= t; ++i) {
        need += kv::settled_new_blocks(ring[i].ctx, n_kv, bs);
        sum_ctx += ring[i].ctx;
      }
      k += i - from;
      if (i != n || k == cap) break;
      from = 0;
    }
    if (k == 0) {
      // Idle until the head's release, where the general path's wake event would fire.
      const Time r = ring[conveyor_head_].release;
      take_turned_away(r);
      if (r < events_at && r <= horizon_) {
        sample_settled(r);
        wake_at_ = kNever;
        t = r;
        continue;
      }
      leave_settled(0);
      wake_at_next_release(t);
      return true;
    }
    // The general path would block a member (short of blocks), take a caller's last frame (which
    // it does not requeue), or put the first member behind a caller still queued (the last before
    // the head): none of these is a turn of the ring.
    const SettledCaller& back = ring[conveyor_head_ == 0 ? n - 1 : conveyor_head_ - 1];
    if (need > pool_.free() || t >= conveyor_last_ ||
        (k < n && ring[conveyor_head_].release + period < back.release)) {
      leave_settled(0);
      settled_try_at_ = t + period;
      now = t;
      return false;
    }
    pool_.allocate_fitting(need);
    batch_members_ = static_cast<int64_t>(k);
    const Time end = t + settled_step_time(static_cast<int64_t>(k), sum_ctx);
    take_turned_away(end);
    if (!(end < events_at && end <= horizon_)) {
      // An event comes first or at the same instant (a step's end goes before it, then the step
      // after waits for it): the general path ends this step.
      busy_ = true;
      step_start_ = t;
      events_.push(end, EventKind::kStepDone);
      leave_settled(k);
      return true;
    }
    // The step ends: on_step_done and end_members for these members.
    sample_settled(end);
    ++result_.engine_steps;
    ++settled_steps_;
    result_.busy_s += to_seconds(end - t);
    last_step_ = end - t;
    int64_t freed = 0;
    int64_t most_resident = result_.max_resident_blocks_per_session;
    const size_t first = std::min(k, n - conveyor_head_);  // members before the ring's end
    const std::pair<SettledCaller*, SettledCaller*> runs[] = {
        {ring + conveyor_head_, ring + conveyor_head_ + first}, {ring, ring + (k - first)}};
    for (const auto& [from, to] : runs) {
      ledger_.serve_step(end, from, to, [](const SettledCaller& c) { return c.release; });
      for (SettledCaller* c = from; c != to; ++c) {
        freed += kv::settled_freed_blocks(c->ctx, n_kv, w, bs);
        c->ctx += n_kv;
        most_resident = std::max(most_resident, kv::settled_resident_blocks(c->ctx, w, bs));
        c->release += period;
      }
    }
    conveyor_head_ = conveyor_head_ + k >= n ? conveyor_head_ + k - n : conveyor_head_ + k;
    pool_.release(freed);
    result_.max_resident_blocks_per_session = most_resident;
    if (observer_) observer_->on_step(t, end, batch_members_, pool_.used());
    t = end;
  }
}

// Writes the ring back into the sessions and the ready queue (the same order, fresh sequence
// numbers); the first `in_step` callers from the head are the members of a step in flight.
void Engine::leave_settled(size_t in_step) {
  const size_t n = conveyor_.size();
  ready_.clear();
  batch_.clear();
  for (size_t j = 0, i = conveyor_head_; j < n; ++j) {
    const SettledCaller& c = conveyor_[i];
    const int32_t id = conveyor_ids_[i];
    if (++i == n) i = 0;
    Session& s = sessions_[id];
    s.ctx = c.ctx;
    s.held = kv::settled_resident_blocks(c.ctx, rule_.w, block_size_);
    s.next_release = c.release;
    s.next_frame = (c.release - s.arrival) / period_;
    if (j < in_step) {
      s.held += kv::settled_new_blocks(c.ctx, rule_.growth.per_frame, block_size_);
      s.in_step = true;
      batch_.push_back({id, s.incarnation});
    } else {
      ready_.push_fresh({id, s.incarnation, next_seq_++, c.release, s.admit_order});
    }
  }
}

// The run loop's samples before an event at t: they read the callers' next frames.
void Engine::sample_settled(Time t) {
  if (!ledger_.sample_due(t)) return;
  for (size_t i = 0; i < conveyor_.size(); ++i) {
    Session& s = sessions_[conveyor_ids_[i]];
    s.next_frame = (conveyor_[i].release - s.arrival) / period_;
  }
  ledger_.sample_until(t, sessions_, [this] { return gauges(); });
}

// A step of k settled callers whose contexts sum to sum_ctx, priced as choose_batch prices it. A
// window's price depends on k alone (every caller reads the cap), so it is kept by k.
Time Engine::settled_step_time(int64_t k, int64_t sum_ctx) {
  auto price = [&] {
    FramePasses p;
    rule_.add_settled_run(k, sum_ctx, p);
    return step_duration(p.seconds(cost_), cost_);
  };
  if (rule_.w.unbounded()) return price();
  const size_t i = static_cast<size_t>(k);
  if (i < settled_step_.size() && settled_step_[i] > 0) [[likely]]
    return settled_step_[i];
  if (i >= settled_step_.size()) settled_step_.resize(i + 1, 0);
  return settled_step_[i] = price();
}

}  // namespace metronome
