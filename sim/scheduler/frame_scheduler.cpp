#include "sim/scheduler/frame_scheduler.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <optional>
#include <stdexcept>

#include "sim/cost/step_time.h"

namespace metronome {

FrameScheduler::FrameScheduler(EngineCore& core)
    : core_(core),
      max_batch_(core.scenario.engine.max_sessions_per_step),
      exhaustion_(*core.scenario.engine.exhaustion),
      keeps_admission_order_(exhaustion_.preempts()),
      cohorts_(!exhaustion_.preempts() && core.jitter == 0),
      ring_on_(core.jitter == 0) {}

void FrameScheduler::open(int64_t id) {
  assert(!ring_.active());  // the engine flushes before it admits
  Session& s = core_.sessions[id];
  // Identical callers start their clocks at the same instant.
  const bool twin = cohorts_ && s.arrival == last_arrival_;
  if (twin && core_.sessions[last_arrival_id_].incarnation == last_arrival_incarnation_) {
    core_.sessions[last_arrival_id_].twin = true;
  }
  s.twin = twin;
  last_arrival_ = s.arrival;
  last_arrival_id_ = id;
  last_arrival_incarnation_ = s.incarnation;
  if (keeps_admission_order_) admit_stack_.push_back({id, s.admit_order});
  enqueue(id);
}

void FrameScheduler::close(int64_t id) {
  assert(!ring_.active());  // the engine flushes before a departure
  const Session& s = core_.sessions[id];
  if (s.stalled) {
    core_.stalled -= s.count;
    ++blocked_dead_;  // a stalled frame waits in blocked_: its entry there is now dead
  }
  if (admit_stack_.size() > 2 * static_cast<size_t>(core_.live) + 64) {  // keep it O(live)
    std::erase_if(admit_stack_, [&](const Admission& a) {
      const Session& v = core_.sessions[a.id];
      return v.admit_order != a.order || v.state != Session::State::kLive;
    });
  }
}

// Moves all but the `keep` oldest members of a cohort to a new slot, which the caller queues.
int64_t FrameScheduler::split(int64_t id, int64_t keep) {
  const int64_t n = core_.new_slot();
  Session& rest = core_.sessions[n];
  Session& s = core_.sessions[id];
  const uint32_t incarnation = rest.incarnation;
  rest = s;
  rest.incarnation = incarnation;
  rest.count = s.count - keep;
  rest.admit_order = s.admit_order + keep;
  s.count = keep;
  if (rest.end != kNever) core_.events.push(rest.end, EventKind::kDeparture, n, rest.incarnation);
  return n;
}

// A session re-queued right behind an identical cohort whose members were admitted just before it
// joins that cohort; its slot (and the departure scheduled for it) retire.
bool FrameScheduler::absorb_into_back(int64_t id) {
  if (!cohorts_ || !core_.sessions[id].twin || core_.ready.empty()) return false;
  const Ticket b = core_.ready.back();
  Session& c = core_.sessions[b.id];
  const Session& s = core_.sessions[id];
  if (c.incarnation != b.incarnation || c.admit_order + c.count != s.admit_order ||
      c.state != Session::State::kLive || c.in_step || c.stalled ||
      static_cast<const CohortState&>(c) != static_cast<const CohortState&>(s)) {
    return false;
  }
  c.count += s.count;
  const bool had_departure = s.end != kNever;
  core_.sessions[id].state = Session::State::kGone;
  core_.next_incarnation(id);
  core_.free_slots.push_back(id);
  // The retired slot's departure stays in the queue until its time; a call as long as the run
  // splits and rejoins once a period, so they would pile up by the million (520 MB at 1e6 s of
  // 80 ms frames). Past a few thousand, and over half the queue, the stale ones are dropped.
  if (had_departure && ++stale_departures_ > 4096 && 2 * stale_departures_ > core_.events.size()) {
    core_.events.remove_if([this](const Event& e) {
      return e.kind() == EventKind::kDeparture &&
             core_.sessions[static_cast<size_t>(e.target)].incarnation != e.incarnation;
    });
    stale_departures_ = 0;
  }
  return true;
}

bool FrameScheduler::reserve(const Ticket& t, Time now) {
  const int64_t id = t.id;
  const int64_t total = core_.rule.step_blocks(core_.sessions[id]);
  const int64_t need = total - core_.sessions[id].held;  // per member
  bool fits = need == 0 || core_.sessions[id].count <= core_.pool.free() / need;
  if (!fits && core_.sessions[id].count > 1) {
    // As many members as fit go now, in admission order; the rest stay at the front of the queue.
    const int64_t fit = core_.pool.free() / need;
    if (fit > 0) {
      core_.ready.push_front(core_.ticket(split(id, fit), t.seq));
      fits = true;
    }
  }
  Session& s = core_.sessions[id];
  if ((fits && core_.pool.try_allocate(need * s.count)) ||
      (exhaustion_.make_room(*this, id, need, now) && core_.pool.try_allocate(need * s.count))) {
    s.held = total;
    if (s.stalled) {
      s.stalled = false;
      core_.stalled -= s.count;
    }
    if (s.state == Session::State::kPreempted) {
      s.state = Session::State::kLive;
      s.admit_order = core_.next_admit_order++;
      admit_stack_.push_back({id, s.admit_order});
    }
    return true;
  }
  core_.note_exhaustion(now);
  if (exhaustion_.on_refused(*this, id, s.held > 0, now) == ExhaustionPolicy::Refused::kWait &&
      !s.stalled) {
    s.stalled = true;
    core_.stalled += s.count;
  }
  return false;
}

bool FrameScheduler::evict_newer_than(int64_t id, int64_t need, Time now) {
  const int64_t order = core_.sessions[id].admit_order;
  // Walk from the newest admission down, evicting sessions that are not in this step, until enough
  // blocks are free or only older sessions remain.
  size_t i = admit_stack_.size();
  while (core_.pool.free() < need && i > 0) {
    const Admission t = admit_stack_[--i];
    Session& v = core_.sessions[t.id];
    const bool valid = v.admit_order == t.order && v.state == Session::State::kLive;
    if (!valid) {
      admit_stack_.erase(admit_stack_.begin() + static_cast<ptrdiff_t>(i));
      continue;
    }
    if (v.admit_order <= order) break;
    if (v.in_step || v.held == 0) continue;
    evict(t.id, now);
  }
  return core_.pool.free() >= need;
}

void FrameScheduler::evict(int64_t id, Time now) {
  Session& v = core_.sessions[id];
  if (v.count != 1) throw std::logic_error("FrameScheduler: cohorts are not used with preemption");
  const int64_t freed = v.held;
  core_.pool.release(freed);
  v.held = 0;
  v.state = Session::State::kPreempted;
  // Its history must be recomputed: all of it unbounded, the sinks and window when windowed.
  v.recompute = core_.rule.cached(v.ctx);
  ++core_.result.preemptions;
  if (!core_.result.first_preempt_s) core_.result.first_preempt_s = to_seconds(now);
  core_.note_exhaustion(now);
  if (core_.observer) core_.observer->on_preempt(now, id, freed);
}

// A frame that cannot get blocks under the stall policy waits outside the ready queue, in the
// queue's (next_release, seq) order: until blocks are freed its need cannot be met, and retrying it
// on every step would make a stalled engine quadratic in its sessions. Returns its position.
size_t FrameScheduler::block(const Ticket& t) {
  while (blocked_.size() > blocked_head_ && !core_.valid(blocked_.back())) {
    blocked_.pop_back();
    if (blocked_dead_ > 0) --blocked_dead_;
  }
  // Every entry from the head on, dead or not, is in service order (a dead entry keeps its key):
  // a binary search, where a walk back from the end made a deep stall quadratic.
  const auto it = std::upper_bound(blocked_.begin() + static_cast<ptrdiff_t>(blocked_head_),
                                   blocked_.end(), t, earlier);
  return static_cast<size_t>(blocked_.insert(it, t) - blocked_.begin());
}

std::optional<Time> FrameScheduler::start_step(Time now) {
  const int64_t blocked = choose_batch(now);
  if (batch_members_ == 0) {
    // Nothing runnable now. Frames blocked on memory wait for a departure, which calls us.
    if (ring_.active()) {
      core_.wake_at_release(ring_.at(0).next_release, now);
    } else {
      core_.wake_at_next_release(now);
    }
  }
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) core_.ready.push_front(*it);
  if (blocked > 0 && core_.observer) core_.observer->on_stall(now, core_.stalled);
  if (batch_members_ == 0) return std::nullopt;
  return now + step_duration(passes_.seconds(core_.cost), core_.cost);
}

void FrameScheduler::end_step(Time now) {
  // Templates on jitter and on whether the KV policy is a window: nothing in the loop tests them.
  const bool window = core_.rule.residency.is_window();
  if (ring_step_ > 0) {
    window ? end_ring<true>(now) : end_ring<false>(now);
    return;
  }
  if (core_.jitter > 0) {
    window ? end_members<true, true>(now) : end_members<true, false>(now);
  } else {
    window ? end_members<false, true>(now) : end_members<false, false>(now);
  }
  batch_.clear();
}

// Takes ready frames into batch_ in service order, up to the batch cap, merging in the blocked
// frames when blocks were freed since they failed; returns the members that could not get blocks.
// Sessions the step could not take under preemption are left in kept_, in service order.
int64_t FrameScheduler::choose_batch(Time now) {
  batch_.clear();
  kept_.clear();
  int64_t blocked = 0;
  batch_members_ = 0;
  passes_ = FramePasses{};
  if (!ring_.active() && ring_on_ && now >= ring_try_at_) enter_ring(now);
  if (ring_.active()) {
    const bool turns =
        core_.rule.residency.is_window() ? take_ring<true>(now) : take_ring<false>(now);
    if (turns) return 0;
    leave_ring();  // the general path goes on from the caller short of blocks
  }
  // Blocked frames are considered again, merged into the ready order, only if blocks were freed
  // since they failed, and only while a block is free (each needs at least one).
  while (blocked_head_ < blocked_.size() && !core_.valid(blocked_[blocked_head_])) ++blocked_head_;
  if (core_.pool.released_total() != released_seen_) retry_blocked_ = true;
  released_seen_ = core_.pool.released_total();
  size_t cursor = retry_blocked_ ? blocked_head_ : blocked_.size();
  while (batch_members_ < max_batch_ && cursor < blocked_.size()) {
    core_.purge_ready_front();
    if (core_.pool.free() == 0) cursor = blocked_.size();
    while (cursor < blocked_.size() && !core_.valid(blocked_[cursor])) ++cursor;
    const bool from_ready = !core_.ready.empty() && core_.ready.front().release <= now;
    const bool from_blocked = cursor < blocked_.size();
    if (!from_ready && !from_blocked) break;
    if (const int64_t a = core_.ready.id_ahead(EngineCore::kAhead); a >= 0 && core_.far())
      core_.prefetch(a);
    Ticket t;
    const bool retried =
        from_blocked && (!from_ready || earlier(blocked_[cursor], core_.ready.front()));
    if (retried) {
      t = blocked_[cursor];
      blocked_[cursor].incarnation = kTaken;  // a tombstone until compaction
      ++cursor;
      ++blocked_dead_;
    } else {
      t = core_.ready.front();
      core_.ready.pop_front();
    }
    if (!take(t, now)) {
      if (!core_.sessions[t.id].stalled) {  // the policy retries it (ExhaustionPolicy::Refused)
        kept_.push_back(t);
      } else if (retried) {
        // Blocked again: back where it was, just behind the cursor (not retried in this pass).
        blocked_[cursor - 1] = t;
        --blocked_dead_;
      } else if (block(t) <= cursor) {
        ++cursor;  // not to be retried in this pass
      }
      blocked += core_.sessions[t.id].count;
    }
  }
  // Once no blocked frame is left to merge (it stays so for the pass: a frame blocked now is put
  // at or before the cursor), the step takes ready frames from the queue's front alone.
  while (batch_members_ < max_batch_) {
    take_usual_run(now);
    if (batch_members_ >= max_batch_) break;
    const Ticket* f = core_.ready.peek();
    if (f == nullptr || f->release > now) break;
    if (!core_.valid(*f)) {
      core_.ready.pop_front();
      continue;
    }
    const Ticket t = *f;
    core_.ready.pop_front();
    if (!take(t, now)) {
      if (!core_.sessions[t.id].stalled) {  // the policy retries it (ExhaustionPolicy::Refused)
        kept_.push_back(t);
      } else if (block(t) <= cursor) {
        ++cursor;
      }
      blocked += core_.sessions[t.id].count;
    }
  }
  // A pass the batch cap ended early leaves blocked frames untried: the next pass tries them.
  retry_blocked_ = cursor < blocked_.size() && core_.pool.free() > 0;
  if (blocked_dead_ > blocked_.size() / 2) {
    std::erase_if(blocked_, [&](const Ticket& b) { return !core_.valid(b); });
    blocked_dead_ = 0;
    blocked_head_ = 0;
  }
  return blocked;
}

// Takes the run of ready tickets at the queue's front (ReadyQueue::run_bound) whose sessions are
// usual single callers (Session::usual_single) and whose blocks fit, with the pool and the sums
// that price them in locals: the stores into each session would otherwise make the compiler
// reload and store them once per frame. Stops at the first ticket it does not cover, which the
// one-by-one path then looks at. A template on whether the KV policy is a window, tested once a
// run rather than once a frame.
void FrameScheduler::take_usual_run(Time now) {
  if (core_.rule.residency.is_window()) {
    take_usual_run<true>(now);
  } else {
    take_usual_run<false>(now);
  }
}

template <bool kWindow>
void FrameScheduler::take_usual_run(Time now) {
  const size_t run = core_.ready.ring_size();
  const Time bound = std::min(now, core_.ready.run_bound());
  if (run == 0 || core_.ready.run_at(0).release > bound) return;
  const size_t limit = std::min(run, static_cast<size_t>(max_batch_ - batch_members_));
  const FrameRule& rule = core_.rule;
  const int64_t free = core_.pool.free();
  const bool far = core_.far();
  int64_t left = free;
  FrameRule::RunSums sums;
  Session* const sessions = core_.sessions.data();
  Member* const out = batch_.tail(limit);
  const RingQueue<Ticket>::View ring = core_.ready.run();
  size_t k = 0;
  for (; k < limit; ++k) {
    const Ticket& t = ring[k];
    if (t.release > bound) break;
    if (far && k + EngineCore::kAhead < run) core_.prefetch(ring[k + EngineCore::kAhead].id);
    Session& s = sessions[t.id];
    if (s.incarnation != t.incarnation || !s.usual_single() ||
        !rule.join_run<kWindow>(s, left, sums)) {
      break;
    }
    s.in_step = true;
    out[k] = {t.id, t.incarnation};
  }
  batch_.added(k);
  core_.ready.pop_run(k);
  // Within a step the pool only fills, so its peak is where this run leaves it.
  core_.pool.allocate_fitting(free - left);
  batch_members_ += static_cast<int64_t>(k);
  rule.add_run_passes(sums, passes_);
}

// Takes ticket t (just off a queue) into the step, as many members as the batch cap leaves room
// for, if it gets its blocks. Its forward passes are priced as it joins: every member ingests its
// frame (with its prompt first, or its history to recompute after a preemption) over its cached
// visible keys, then decodes. Nothing a later member's admission does changes what a member
// already taken adds (members are not preempted, split or advanced until the step ends).
bool FrameScheduler::take(const Ticket& t, Time now) {
  {
    const Session& s = core_.sessions[t.id];
    const int64_t room = max_batch_ - batch_members_;
    if (s.count > room) core_.ready.push_front(core_.ticket(split(t.id, room), t.seq));
  }
  if (!reserve(t, now)) return false;
  Session& s = core_.sessions[t.id];  // split may have moved the slots
  s.in_step = true;
  batch_members_ += s.count;
  batch_.push_back({t.id, t.incarnation});
  core_.rule.add_passes(s, passes_);
  return true;
}

// Each member of the step that is still there has its frame served and is queued for its next,
// and the blocks that fell out of the windows go back to the pool. A template on jitter (without
// it a frame is released on its schedule, and the loop tests nothing for it) and on whether the
// KV policy is a window (its closed forms, with no test per frame).
template <bool kJitter, bool kWindow>
void FrameScheduler::end_members(Time now) {
  // Nothing in the loop reads the pool or the largest residency: both are summed up after it.
  int64_t freed = 0;
  int64_t most_resident = core_.result.max_resident_blocks_per_session;
  // Locals for what the loop's stores might alias (see take); nothing in it resizes these vectors.
  const FrameRule rule = core_.rule;
  const int64_t period = core_.period;
  Session* const sessions = core_.sessions.data();
  const Member* const batch = batch_.data();
  const size_t n = batch_.size();
  uint64_t seq = core_.next_seq;
  const bool far = core_.far();
  FrameLedger& ledger = core_.ledger;
  ReadyQueue::Appender ready(core_.ready, n);
  for (size_t i = 0; i < n; ++i) {
    if (far && i + EngineCore::kAhead < n) core_.prefetch(batch[i + EngineCore::kAhead].id);
    const Member& t = batch[i];
    Session& s = sessions[t.id];
    if (s.incarnation != t.incarnation) continue;  // it left, or merged, during the step
    s.in_step = false;
    freed += rule.serve_frame<kWindow>(s) * s.count;
    s.recompute = 0;
    most_resident = std::max(most_resident, s.held);
    // Jitter delays a frame's release, not its place in the schedule (arrival + frame x period).
    const Time scheduled = kJitter ? s.arrival + s.next_frame * period : s.next_release;
    ledger.serve(scheduled, now - s.next_release, s.count);
    ++s.next_frame;
    if (has_next_frame(s)) {
      if constexpr (kJitter) {
        s.next_release = core_.release_time(s, s.next_frame);
      } else {
        s.next_release += period;
      }
      // enqueue(t.id), from what is at hand (the ticket's incarnation is the slot's: checked).
      // absorb_into_back reads the queue's back: the tickets pushed so far are published first.
      if (s.twin) ready.publish();
      if (!(s.twin && absorb_into_back(t.id))) {
        ready.push_fresh({t.id, t.incarnation, seq++, s.next_release, s.admit_order});
      }
    }
  }
  ready.publish();
  core_.next_seq = seq;
  core_.pool.release(freed);
  core_.result.max_resident_blocks_per_session = most_resident;
}

void FrameScheduler::sync() {
  for (size_t j = 0; j < ring_.size(); ++j) write_back(ring_.at(j));
}

void FrameScheduler::flush() {
  if (!ring_.active()) return;
  leave_ring();
  ring_try_at_ = 0;  // the queue it leaves was the ring's: the next step may turn it again
}

// Copies the ready queue into the ring if every queued caller is usual; otherwise waits a period
// before it looks again (a caller's first frame, a stalled or recomputing one, pass within about
// that), so that a regime the ring cannot hold costs a look per period, not per step.
bool FrameScheduler::enter_ring(Time now) {
  ring_try_at_ = now + core_.period;
  if (core_.stalled > 0 || !core_.ready.all_in_order()) return false;
  for (size_t i = blocked_head_; i < blocked_.size(); ++i) {
    if (core_.valid(blocked_[i])) return false;
  }
  ring_.clear();
  const RingQueue<Ticket>::View queue = core_.ready.run();
  for (size_t i = 0; i < core_.ready.ring_size(); ++i) {
    const Ticket& t = queue[i];
    const Session& s = core_.sessions[t.id];
    if (s.incarnation != t.incarnation) continue;  // its caller left: every path skips it
    if (!s.usual_single() || s.twin) {
      ring_.clear();
      return false;
    }
    ring_.push_back({s.next_release, s.ctx, s.held, s.next_frame, s.frames_total, t.id});
  }
  if (!ring_.active()) return false;
  core_.ready.clear();
  return true;
}

// The ring's copy of a caller's per-frame fields back into its session.
void FrameScheduler::write_back(const UsualRing::Caller& c) {
  Session& s = core_.sessions[c.id];
  s.next_release = c.next_release;
  s.ctx = c.ctx;
  s.held = c.held;
  s.next_frame = c.next_frame;
}

// Writes the ring's copies back into the sessions and the ticket queue, in the ring's order with
// fresh sequence numbers (the same order as the tickets the general path would hold): the callers
// of a running step into it, the others into the queue unless their last frame is served.
void FrameScheduler::leave_ring() {
  for (size_t j = 0; j < ring_.size(); ++j) {
    const UsualRing::Caller& c = ring_.at(j);
    write_back(c);
    Session& s = core_.sessions[c.id];
    if (j < ring_step_) {
      s.in_step = true;
      batch_.push_back({c.id, s.incarnation});
    } else if (has_next_frame(s)) {
      core_.queue(c.id);
    }
  }
  ring_.clear();
  ring_step_ = 0;
}

// take_usual_run on the ring: the callers at its head released by `now`, up to the batch cap,
// while their blocks fit. False if one released by now does not fit: the general path then takes
// the step on from it (its exhaustion policy).
template <bool kWindow>
bool FrameScheduler::take_ring(Time now) {
  const FrameRule& rule = core_.rule;
  const int64_t free = core_.pool.free();
  int64_t left = free;
  FrameRule::RunSums sums;
  const size_t limit = std::min(ring_.size(), static_cast<size_t>(max_batch_));
  bool short_of_blocks = false;
  const size_t k = ring_.take_while(limit, [&](UsualRing::Caller& c) {
    if (c.next_release > now) return false;
    if (rule.join_run<kWindow>(c, left, sums)) return true;
    short_of_blocks = true;
    return false;
  });
  core_.pool.allocate_fitting(free - left);
  batch_members_ = static_cast<int64_t>(k);
  ring_step_ = k;
  rule.add_run_passes(sums, passes_);
  return !short_of_blocks;
}

// end_members on the ring: each caller of the step is served and, one period later, is the ring's
// back, where the ticket queue would put it. A release the queue would not put at its back
// (ReadyQueue::goes_behind: a frame served more than a period late) is not a turn: the ring is
// left. The members' releases ascend and each moves by the period, so only the first can fall
// behind the callers still queued. Nor is a caller's last frame a turn, though its departure
// (due by its next release) has flushed the ring before that step in every run the tests know.
template <bool kWindow>
void FrameScheduler::end_ring(Time now) {
  const FrameRule& rule = core_.rule;
  const Time period = core_.period;
  const size_t k = ring_step_;
  int64_t freed = 0;
  int64_t most_resident = core_.result.max_resident_blocks_per_session;
  const Time first = ring_.at(0).next_release;
  bool turns = k == ring_.size() ||
               ReadyQueue::goes_behind(ring_.at(ring_.size() - 1).next_release, first + period);
  core_.ledger.serve_ascending(now, first, [&](auto&& serve) {
    ring_.for_run(k, [&](UsualRing::Caller& c) {
      freed += rule.serve_frame<kWindow>(c);
      most_resident = std::max(most_resident, c.held);
      serve(c.next_release);
      ++c.next_frame;
      if (has_next_frame(c)) [[likely]] {
        c.next_release += period;
      } else {
        turns = false;
      }
    });
  });
  ring_.turn(k);
  ring_step_ = 0;
  core_.pool.release(freed);
  core_.result.max_resident_blocks_per_session = most_resident;
  if (!turns) leave_ring();
}

}  // namespace metronome
