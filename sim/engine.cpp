#include "sim/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>

#include "sim/call_span.h"
#include "sim/cost/pass_shape.h"
#include "sim/cost/step_time.h"
#include "sim/pool_sizing.h"

namespace metronome {
namespace {

bool vllm_scheduler(const Scenario& s) { return s.engine.scheduler == "vllm_v1"; }

// vLLM keeps one block of its pool as the null block of every block table.
int64_t usable_blocks(const Scenario& s, const PoolSizing& p) {
  return vllm_scheduler(s) ? p.num_blocks - 1 : p.num_blocks;
}

VllmSchedulerConfig vllm_config(const Scenario& s) {
  VllmSchedulerConfig c;
  c.block_size = s.engine.block_size;
  c.max_num_seqs = s.engine.max_sessions_per_step;
  c.max_num_batched_tokens = s.engine.max_num_batched_tokens;
  if (const kv::Window w = s.kv_policy.window(); !w.unbounded()) {
    c.sliding_window = w.window + 1;  // vLLM's window counts the query
    c.sink_tokens = w.sinks;
  }
  c.resumable = s.engine.session_model == "resumable";
  c.prefix_caching = s.engine.enable_prefix_caching;
  return c;
}

}  // namespace

Engine::Engine(const Scenario& s, const CostModel& cost, RunObserver* observer)
    : Engine(s, cost, size_pool(s), observer) {}

Engine::Engine(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
               RunObserver* observer)
    : scenario_(s),
      cost_(cost),
      observer_(observer),
      pool_(usable_blocks(s, pool)),
      period_(std::max<Time>(1, from_seconds(s.workload.frame_period_s))),
      horizon_(from_seconds(s.horizon_s)),
      jitter_(from_seconds(s.workload.frame_jitter_s)),
      n_in_(s.workload.input_tokens_per_frame),
      n_out_(s.workload.output_tokens_per_frame),
      max_batch_(s.engine.max_sessions_per_step),
      exhaustion_(*s.engine.exhaustion),
      keeps_admission_order_(exhaustion_.preempts()),
      rule_{s.workload.growth(), n_in_, n_out_, s.kv_rule()},
      arrival_rng_(s.seed, "arrivals"),
      duration_rng_(s.seed, "durations"),
      jitter_rng_(s.seed, "jitter"),
      arrivals_(make_arrival_process(s.workload.arrival)),
      durations_(make_duration_distribution(s.workload.duration)),
      gate_(s, rule_, cost, pool_.capacity(), period_, horizon_, !vllm_scheduler(s)),
      ledger_(s, result_, observer, gate_.adaptive()) {
  if (vllm_scheduler(s)) {
    keeps_admission_order_ = false;  // vLLM's scheduler preempts by its own rule
    vllm_ = std::make_unique<VllmScheduler>(vllm_config(s), pool_);
  }
  cohorts_ = !exhaustion_.preempts() && jitter_ == 0 && !vllm_;
  if (s.kv_policy.policy->context_cap()) result_.sessions_context_capped = 0;
}

RunResult Engine::run() {
  begin();
  return end();
}

void Engine::begin() {
  if (!placed_) {
    if (auto t = arrivals_->next(arrival_rng_); t && *t <= horizon_) {
      events_.push(*t, EventKind::kArrival);
    }
  }
  if (gate_.adaptive() && gate_.control_period() <= horizon_)
    events_.push(gate_.control_period(), EventKind::kControl);
}

void Engine::advance(Time until, bool arrival_at_until) {
  external_at_ = arrival_at_until ? until : kNever;
  // A step wanted at the instant of a placed arrival, once nothing else can happen there.
  if (step_wanted_ && instant_over(now_)) {
    step_wanted_ = false;
    try_start_step(now_);
  }
  while (!events_.empty() &&
         (events_.top().time < until ||
          (events_.top().time == until &&
           (!arrival_at_until || events_.top().kind() < EventKind::kArrival)))) {
    const Event e = events_.pop();
    now_ = e.time;
    ledger_.sample_until(e.time, sessions_, [this] { return gauges(); });
    switch (e.kind()) {
      case EventKind::kDeparture:
        if (sessions_[e.target].incarnation == e.incarnation) on_departure(e.target);
        break;
      case EventKind::kStepDone:
        on_step_done(e.time);
        break;
      case EventKind::kControl:
        on_control(e.time);
        break;
      case EventKind::kArrival:
        on_arrival(e.time);
        break;
      case EventKind::kEngineWake:
        if (e.time == wake_at_) {
          wake_at_ = kNever;
          step_wanted_ = true;
        }
        break;
    }
    // The engine looks for ready frames once all events of this instant are handled, so that what
    // it serves does not depend on the order of simultaneous departures and arrivals.
    if (step_wanted_ && instant_over(e.time)) {
      step_wanted_ = false;
      try_start_step(e.time);
    }
  }
}

Engine::Placement Engine::place(Time now, double duration_s) {
  now_ = now;
  ledger_.sample_until(now, sessions_, [this] { return gauges(); });
  return admit(now, duration_s);
}

RunResult Engine::end() {
  advance(horizon_, false);
  finish();
  return result_;
}

Time Engine::release_time(const Session& s, int64_t frame) {
  Time t = s.arrival + frame * period_;
  if (jitter_ > 0) {
    t += static_cast<Time>(jitter_rng_.uniform() * static_cast<double>(jitter_));
  }
  return t;
}

void Engine::on_arrival(Time now) {
  if (auto t = arrivals_->next(arrival_rng_); t && *t <= horizon_) {
    events_.push(*t, EventKind::kArrival);
  }
  // The duration is drawn even for a rejected caller, so the controller never shifts the streams.
  admit(now, durations_->sample(duration_rng_));
}

Engine::Placement Engine::admit(Time now, double duration_s) {
  ++result_.sessions_arrived;
  const AdmissionGate::Entry entry = gate_.admit(now, duration_s, live_);
  if (entry.context_capped) ++*result_.sessions_context_capped;
  if (entry.verdict != Placement::kAdmitted) {
    ++result_.sessions_rejected;
    if (entry.verdict == Placement::kNoMemory) ++result_.admission.rejected_by_memory;
    ledger_.note_rejected();
    return entry.verdict;
  }
  const Time start = entry.start;
  // Identical callers start their clocks at the same instant.
  const bool twin = cohorts_ && start == last_arrival_;
  if (twin && sessions_[last_arrival_id_].incarnation == last_arrival_incarnation_) {
    sessions_[last_arrival_id_].twin = true;
  }
  last_arrival_ = start;
  const int64_t id = new_slot();
  last_arrival_id_ = id;
  last_arrival_incarnation_ = sessions_[id].incarnation;
  Session& s = sessions_[id];
  s.arrival = start;
  s.twin = twin;
  s.reserve = entry.reserve;
  // A call that outlives the run never departs; its frame count only needs to exceed the horizon.
  s.frames_total = entry.call.frames;
  s.end = entry.call.end;
  if (s.end != kNever) events_.push(s.end, EventKind::kDeparture, id, s.incarnation);
  last_hang_up_ = std::max(last_hang_up_, s.end);
  s.admit_order = next_admit_order_++;
  s.next_release = release_time(s, 0);
  if (keeps_admission_order_) admit_stack_.push_back({id, s.admit_order});
  if (vllm_) vllm_->open(id);
  ++live_;
  result_.peak_live_sessions = std::max(result_.peak_live_sessions, live_);
  enqueue(id);
  step_wanted_ = true;
  return Placement::kAdmitted;
}

int64_t Engine::new_slot() {
  int64_t id;
  if (!free_slots_.empty()) {
    id = free_slots_.back();
    free_slots_.pop_back();
  } else {
    id = static_cast<int64_t>(sessions_.size());
    if (id == std::numeric_limits<int32_t>::max()) {  // tickets name slots in 32 bits
      throw std::length_error("Engine: more than 2^31 - 1 session slots");
    }
    sessions_.emplace_back();
  }
  const uint32_t incarnation = sessions_[id].incarnation;
  sessions_[id] = Session{};
  sessions_[id].incarnation = incarnation;
  next_incarnation(id);
  return id;
}

// Moves all but the `keep` oldest members of a cohort to a new slot, which the caller queues.
int64_t Engine::split(int64_t id, int64_t keep) {
  const int64_t n = new_slot();
  Session& rest = sessions_[n];
  Session& s = sessions_[id];
  const uint32_t incarnation = rest.incarnation;
  rest = s;
  rest.incarnation = incarnation;
  rest.count = s.count - keep;
  rest.admit_order = s.admit_order + keep;
  s.count = keep;
  if (rest.end != kNever) events_.push(rest.end, EventKind::kDeparture, n, rest.incarnation);
  return n;
}

// A session re-queued right behind an identical cohort whose members were admitted just before it
// joins that cohort; its slot (and the departure scheduled for it) retire.
bool Engine::absorb_into_back(int64_t id) {
  if (!cohorts_ || !sessions_[id].twin || ready_.empty()) return false;
  const Ticket b = ready_.back();
  Session& c = sessions_[b.id];
  const Session& s = sessions_[id];
  if (c.incarnation != b.incarnation || c.admit_order + c.count != s.admit_order ||
      c.state != Session::State::kLive || c.in_step || c.stalled ||
      static_cast<const CohortState&>(c) != static_cast<const CohortState&>(s)) {
    return false;
  }
  c.count += s.count;
  const bool had_departure = s.end != kNever;
  sessions_[id].state = Session::State::kGone;
  next_incarnation(id);
  free_slots_.push_back(id);
  // The retired slot's departure stays in the queue until its time; a call as long as the run
  // splits and rejoins once a period, so they would pile up by the million (520 MB at 1e6 s of
  // 80 ms frames). Past a few thousand, and over half the queue, the stale ones are dropped.
  if (had_departure && ++stale_departures_ > 4096 && 2 * stale_departures_ > events_.size()) {
    events_.remove_if([this](const Event& e) {
      return e.kind() == EventKind::kDeparture &&
             sessions_[static_cast<size_t>(e.target)].incarnation != e.incarnation;
    });
    stale_departures_ = 0;
  }
  return true;
}

void Engine::on_departure(int64_t id) {
  Session& s = sessions_[id];
  if (vllm_) vllm_->finish(id);
  gate_.depart(s);
  pool_.release(s.held * s.count);
  s.held = 0;
  if (s.stalled) {
    stalled_ -= s.count;
    ++blocked_dead_;  // a stalled frame waits in blocked_: its entry there is now dead
  }
  s.state = Session::State::kGone;
  next_incarnation(id);  // its tickets and step membership are stale from now
  ledger_.depart(s);
  live_ -= s.count;
  result_.sessions_departed += s.count;
  free_slots_.push_back(id);
  if (admit_stack_.size() > 2 * static_cast<size_t>(live_) + 64) {  // keep it O(live sessions)
    std::erase_if(admit_stack_, [&](const Admission& a) {
      const Session& v = sessions_[a.id];
      return v.admit_order != a.order || v.state != Session::State::kLive;
    });
  }
  step_wanted_ = true;
}

bool Engine::reserve(const Ticket& t, Time now) {
  const int64_t id = t.id;
  const int64_t total = rule_.step_blocks(sessions_[id]);
  const int64_t need = total - sessions_[id].held;  // per member
  bool fits = need == 0 || sessions_[id].count <= pool_.free() / need;
  if (!fits && sessions_[id].count > 1) {
    // As many members as fit go now, in admission order; the rest stay at the front of the queue.
    const int64_t fit = pool_.free() / need;
    if (fit > 0) {
      ready_.push_front(ticket(split(id, fit), t.seq));
      fits = true;
    }
  }
  Session& s = sessions_[id];
  if ((fits && pool_.try_allocate(need * s.count)) ||
      (exhaustion_.make_room(*this, id, need, now) && pool_.try_allocate(need * s.count))) {
    s.held = total;
    if (s.stalled) {
      s.stalled = false;
      stalled_ -= s.count;
    }
    if (s.state == Session::State::kPreempted) {
      s.state = Session::State::kLive;
      s.admit_order = next_admit_order_++;
      admit_stack_.push_back({id, s.admit_order});
    }
    return true;
  }
  note_exhaustion(now);
  if (exhaustion_.on_refused(*this, id, s.held > 0, now) == ExhaustionPolicy::Refused::kWait &&
      !s.stalled) {
    s.stalled = true;
    stalled_ += s.count;
  }
  return false;
}

bool Engine::evict_newer_than(int64_t id, int64_t need, Time now) {
  const int64_t order = sessions_[id].admit_order;
  // Walk from the newest admission down, evicting sessions that are not in this step, until enough
  // blocks are free or only older sessions remain.
  size_t i = admit_stack_.size();
  while (pool_.free() < need && i > 0) {
    const Admission t = admit_stack_[--i];
    Session& v = sessions_[t.id];
    const bool valid = v.admit_order == t.order && v.state == Session::State::kLive;
    if (!valid) {
      admit_stack_.erase(admit_stack_.begin() + static_cast<ptrdiff_t>(i));
      continue;
    }
    if (v.admit_order <= order) break;
    if (v.in_step || v.held == 0) continue;
    evict(t.id, now);
  }
  return pool_.free() >= need;
}

void Engine::evict(int64_t id, Time now) {
  Session& v = sessions_[id];
  if (v.count != 1) throw std::logic_error("Engine: cohorts are not used with preemption");
  const int64_t freed = v.held;
  pool_.release(freed);
  v.held = 0;
  v.state = Session::State::kPreempted;
  // Its history must be recomputed: all of it unbounded, the sinks and window when windowed.
  v.recompute = rule_.cached(v.ctx);
  ++result_.preemptions;
  if (!result_.first_preempt_s) result_.first_preempt_s = to_seconds(now);
  note_exhaustion(now);
  if (observer_) observer_->on_preempt(now, id, freed);
}

// A frame that cannot get blocks under the stall policy waits outside the ready queue, in the
// queue's (next_release, seq) order: until blocks are freed its need cannot be met, and retrying it
// on every step would make a stalled engine quadratic in its sessions. Returns its position.
size_t Engine::block(const Ticket& t) {
  while (blocked_.size() > blocked_head_ && !valid(blocked_.back())) {
    blocked_.pop_back();
    if (blocked_dead_ > 0) --blocked_dead_;
  }
  auto it = blocked_.end();
  const auto head = blocked_.begin() + static_cast<ptrdiff_t>(blocked_head_);
  while (it != head && (!valid(*std::prev(it)) || earlier(t, *std::prev(it)))) --it;
  return static_cast<size_t>(blocked_.insert(it, t) - blocked_.begin());
}

void Engine::try_start_step(Time now) {
  if (busy_) return;
  if (vllm_) {
    vllm_start_step(now);
    return;
  }
  const int64_t blocked = choose_batch(now);
  if (batch_.empty()) {
    // Nothing runnable now. Frames blocked on memory wait for a departure, which calls us.
    wake_at_next_release(now);
  }
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) ready_.push_front(*it);
  if (blocked > 0 && observer_) observer_->on_stall(now, stalled_);
  if (!batch_.empty()) start_step(now, pass_seconds());
}

// Takes ready frames into batch_ in service order, up to the batch cap, merging in the blocked
// frames when blocks were freed since they failed; returns the members that could not get blocks.
// Sessions the step could not take under preemption are left in kept_, in service order.
int64_t Engine::choose_batch(Time now) {
  batch_.clear();
  kept_.clear();
  int64_t blocked = 0;
  batch_members_ = 0;
  // Blocked frames are considered again, merged into the ready order, only if blocks were freed
  // since they failed, and only while a block is free (each needs at least one).
  while (blocked_head_ < blocked_.size() && !valid(blocked_[blocked_head_])) ++blocked_head_;
  if (pool_.released_total() != released_seen_) retry_blocked_ = true;
  released_seen_ = pool_.released_total();
  size_t cursor = retry_blocked_ ? blocked_head_ : blocked_.size();
  passes_ = FramePasses{};
  while (batch_members_ < max_batch_ && cursor < blocked_.size()) {
    purge_ready_front();
    if (pool_.free() == 0) cursor = blocked_.size();
    while (cursor < blocked_.size() && !valid(blocked_[cursor])) ++cursor;
    const bool from_ready = !ready_.empty() && ready_.front().release <= now;
    const bool from_blocked = cursor < blocked_.size();
    if (!from_ready && !from_blocked) break;
    if (const int64_t a = ready_.id_ahead(kAhead); a >= 0 && far()) prefetch(a);
    Ticket t;
    if (from_blocked && (!from_ready || earlier(blocked_[cursor], ready_.front()))) {
      t = blocked_[cursor];
      blocked_[cursor].incarnation = kTaken;  // a tombstone until compaction
      ++cursor;
      ++blocked_dead_;
    } else {
      t = ready_.front();
      ready_.pop_front();
    }
    if (!take(t, now)) {
      if (!sessions_[t.id].stalled) {  // the policy retries it (ExhaustionPolicy::Refused)
        kept_.push_back(t);
      } else if (block(t) <= cursor) {
        ++cursor;  // not to be retried in this pass
      }
      blocked += sessions_[t.id].count;
    }
  }
  // Once no blocked frame is left to merge (it stays so for the pass: a frame blocked now is put
  // at or before the cursor), the step takes ready frames from the queue's front alone.
  while (batch_members_ < max_batch_) {
    take_usual_run(now);
    if (batch_members_ >= max_batch_) break;
    const Ticket* f = ready_.peek();
    if (f == nullptr || f->release > now) break;
    if (!valid(*f)) {
      ready_.pop_front();
      continue;
    }
    const Ticket t = *f;
    ready_.pop_front();
    if (!take(t, now)) {
      if (!sessions_[t.id].stalled) {  // the policy retries it (ExhaustionPolicy::Refused)
        kept_.push_back(t);
      } else if (block(t) <= cursor) {
        ++cursor;
      }
      blocked += sessions_[t.id].count;
    }
  }
  // A pass the batch cap ended early leaves blocked frames untried: the next pass tries them.
  retry_blocked_ = cursor < blocked_.size() && pool_.free() > 0;
  if (blocked_dead_ > blocked_.size() / 2) {
    std::erase_if(blocked_, [&](const Ticket& b) { return !valid(b); });
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
void Engine::take_usual_run(Time now) {
  if (rule_.residency.is_window()) {
    take_usual_run<true>(now);
  } else {
    take_usual_run<false>(now);
  }
}

template <bool kWindow>
void Engine::take_usual_run(Time now) {
  const size_t run = ready_.ring_size();
  const Time bound = std::min(now, ready_.run_bound());
  if (run == 0 || ready_.run_at(0).release > bound) return;
  const size_t limit = std::min(run, static_cast<size_t>(max_batch_ - batch_members_));
  const FrameRule& rule = rule_;
  const int64_t free = pool_.free();
  const bool far = this->far();
  int64_t left = free;
  FrameRule::RunSums sums;
  Session* const sessions = sessions_.data();
  Member* const out = batch_.tail(limit);
  size_t k = 0;
  for (; k < limit; ++k) {
    const Ticket& t = ready_.run_at(k);
    if (t.release > bound) break;
    if (far && k + kAhead < run) prefetch(ready_.run_at(k + kAhead).id);
    Session& s = sessions[t.id];
    if (s.incarnation != t.incarnation || !s.usual_single()) break;
    assert(s.held == rule.resident_blocks(s.ctx));
    const int64_t need = rule.later_new_blocks<kWindow>(s.ctx, s.held);
    if (need > left) break;
    left -= need;
    s.held += need;
    s.in_step = true;
    rule.add_to_run<kWindow>(s.ctx, sums);
    out[k] = {t.id, t.incarnation};
  }
  batch_.added(k);
  ready_.pop_run(k);
  // Within a step the pool only fills, so its peak is where this run leaves it.
  pool_.allocate_fitting(free - left);
  batch_members_ += static_cast<int64_t>(k);
  rule.add_run_passes(sums, passes_);
}

// Takes ticket t (just off a queue) into the step, as many members as the batch cap leaves room
// for, if it gets its blocks. Its forward passes are priced as it joins: every member ingests its
// frame (with its prompt first, or its history to recompute after a preemption) over its cached
// visible keys, then decodes. Nothing a later member's admission does changes what a member
// already taken adds (members are not preempted, split or advanced until the step ends).
bool Engine::take(const Ticket& t, Time now) {
  {
    const Session& s = sessions_[t.id];
    const int64_t room = max_batch_ - batch_members_;
    if (s.count > room) ready_.push_front(ticket(split(t.id, room), t.seq));
  }
  if (!reserve(t, now)) return false;
  Session& s = sessions_[t.id];  // split may have moved the slots
  s.in_step = true;
  batch_members_ += s.count;
  batch_.push_back({t.id, t.incarnation});
  rule_.add_passes(s, passes_);
  return true;
}

double Engine::pass_seconds() const { return passes_.seconds(cost_); }

void Engine::start_step(Time now, double seconds) {
  busy_ = true;
  step_start_ = now;
  events_.push(now + step_duration(seconds, cost_), EventKind::kStepDone);
}

// The next release among the queued sessions, once the step has taken every ready one.
void Engine::wake_at_next_release(Time now) {
  purge_ready_front();
  if (ready_.empty()) return;
  const Time r = ready_.front().release;
  if (r > now && r < wake_at_) {
    wake_at_ = r;
    events_.push(wake_at_, EventKind::kEngineWake);
  }
}

void Engine::note_exhaustion(Time now) {
  if (!result_.first_stall_s) {
    result_.first_stall_s = to_seconds(now);
    result_.admission.cap_at_first_stall = gate_.cap();
    result_.admission.live_at_first_stall = live_;
  }
}

// vllm_v1: one vLLM iteration. Frames released by now join vLLM's queues first (in release order,
// as requests reach vLLM before its next schedule()), then vLLM's rules choose the step.
void Engine::vllm_start_step(Time now) {
  while (!ready_.empty()) {
    const Ticket t = ready_.front();
    if (!valid(t)) {
      ready_.pop_front();
      continue;
    }
    Session& s = sessions_[t.id];
    if (s.next_release > now) break;
    ready_.pop_front();
    vllm_->add_frame(t.id, rule_.growth.prompt_at(s.frames_added), n_in_,
                     std::max<int64_t>(1, n_out_));
    if (++s.frames_added < s.frames_total) {
      s.next_release = release_time(s, s.frames_added);
      enqueue(t.id);
    }
  }
  vllm_plan_ = vllm_->schedule();
  const VllmScheduler::StepPlan& p = vllm_plan_;
  if (!p.alloc_failed.empty()) note_exhaustion(now);
  for (size_t i = 0; i < p.preempted.size(); ++i) {
    ++result_.preemptions;
    if (!result_.first_preempt_s) result_.first_preempt_s = to_seconds(now);
    if (observer_) observer_->on_preempt(now, p.preempted[i], p.preempted_blocks[i]);
  }
  // Requests left waiting in a step that could not allocate are the stalled sessions.
  stalled_ = p.alloc_failed.empty() ? 0 : vllm_->waiting();
  if (!p.alloc_failed.empty() && observer_) observer_->on_stall(now, stalled_);
  if (p.empty()) {
    wake_at_next_release(now);
    return;
  }
  PassShape pass;
  for (const VllmScheduler::Scheduled& x : p.scheduled) {
    add_chunk(pass, 1, x.tokens, rule_.residency.cached(x.computed), rule_.w);
    result_.max_resident_blocks_per_session =
        std::max(result_.max_resident_blocks_per_session, vllm_->blocks_held(x.session));
  }
  batch_members_ = static_cast<int64_t>(p.scheduled.size());
  const Time duration = step_duration(cost_.pass_seconds(pass), cost_);
  busy_ = true;
  step_start_ = now;
  events_.push(now + duration, EventKind::kStepDone);
}

void Engine::vllm_step_done(Time now) {
  for (const VllmScheduler::FrameDone& d : vllm_->update_from_output(vllm_plan_)) {
    Session& s = sessions_[d.session];
    ledger_.serve(s.arrival + d.frame * period_, now - (s.arrival + d.frame * period_), s.count);
    ++s.next_frame;
  }
}

void Engine::on_step_done(Time now) {
  busy_ = false;
  last_step_ = now - step_start_;
  ++result_.engine_steps;
  result_.busy_s += to_seconds(now - step_start_);
  if (vllm_) vllm_step_done(now);
  // Templates on jitter and on whether the KV policy is a window: nothing in the loop tests them.
  const bool window = rule_.residency.is_window();
  if (jitter_ > 0) {
    window ? end_members<true, true>(now) : end_members<true, false>(now);
  } else {
    window ? end_members<false, true>(now) : end_members<false, false>(now);
  }
  if (observer_) observer_->on_step(step_start_, now, batch_members_, pool_.used());
  batch_.clear();
  step_wanted_ = true;
}

// Each member of the step that is still there has its frame served and is queued for its next,
// and the blocks that fell out of the windows go back to the pool. A template on jitter (without
// it a frame is released on its schedule, and the loop tests nothing for it) and on whether the
// KV policy is a window (its closed forms, with no test per frame).
template <bool kJitter, bool kWindow>
void Engine::end_members(Time now) {
  // Nothing in the loop reads the pool or the largest residency: both are summed up after it.
  int64_t freed = 0;
  int64_t most_resident = result_.max_resident_blocks_per_session;
  // Locals for what the loop's stores might alias (see take); nothing in it resizes these vectors.
  const FrameRule rule = rule_;
  const int64_t period = period_;
  Session* const sessions = sessions_.data();
  const Member* const batch = batch_.data();
  const size_t n = batch_.size();
  uint64_t seq = next_seq_;
  const bool far = this->far();
  for (size_t i = 0; i < n; ++i) {
    if (far && i + kAhead < n) prefetch(batch[i + kAhead].id);
    const Member& t = batch[i];
    Session& s = sessions[t.id];
    if (s.incarnation != t.incarnation) continue;  // it left, or merged, during the step
    s.in_step = false;
    const int64_t f = rule.freed_blocks<kWindow>(s);
    if (f < 0) throw std::logic_error("Engine: a step left a session more blocks");
    s.ctx += rule.appended(s);
    s.held -= f;
    freed += f * s.count;
    assert(s.held == rule.resident_blocks(s.ctx));
    s.recompute = 0;
    most_resident = std::max(most_resident, s.held);
    // Jitter delays a frame's release, not its place in the schedule (arrival + frame x period).
    const Time scheduled = kJitter ? s.arrival + s.next_frame * period : s.next_release;
    ledger_.serve(scheduled, now - s.next_release, s.count);
    ++s.next_frame;
    if (s.next_frame < s.frames_total) {
      if constexpr (kJitter) {
        s.next_release = release_time(s, s.next_frame);
      } else {
        s.next_release += period;
      }
      // enqueue(t.id), from what is at hand (the ticket's incarnation is the slot's: checked).
      if (!(s.twin && absorb_into_back(t.id))) {
        ready_.push_fresh({t.id, t.incarnation, seq++, s.next_release, s.admit_order});
      }
    }
  }
  next_seq_ = seq;
  pool_.release(freed);
  result_.max_resident_blocks_per_session = most_resident;
}

// One control interval ends: the gate reads the interval's frames
// (FrameLedger::close_control_interval) and may move the cap.
void Engine::on_control(Time now) {
  LatencyHistogram& hist = ledger_.close_control_interval(now, sessions_, gate_.true_signal());
  gate_.control(now, hist, live_, sessions_);
  hist.clear();
  if (const Time next = now + gate_.control_period(); next <= horizon_) {
    events_.push(next, EventKind::kControl);
  }
}

EngineGauges Engine::gauges() const {
  return {pool_.used(), pool_.occupancy(), live_, stalled_, gate_.cap(), gate_.last_signal_s()};
}

void Engine::finish() {
  ledger_.finish(sessions_, [this] { return gauges(); });
  result_.end_s = to_seconds(horizon_);
  result_.peak_pool_blocks = pool_.peak();
  result_.final_pool_blocks = pool_.used();
  result_.blocks_allocated = pool_.allocated_total();
  result_.blocks_released = pool_.released_total();
  gate_.summarise(result_, ledger_, live_);
}

RunResult simulate(const Scenario& s, RunObserver* observer) {
  return simulate(s, *make_cost_model(s), observer);
}

RunResult simulate(const Scenario& s, const CostModel& cost, RunObserver* observer) {
  Engine engine(s, cost, observer);
  return engine.run();
}

RunResult simulate(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
                   RunObserver* observer) {
  Engine engine(s, cost, pool, observer);
  return engine.run();
}

}  // namespace metronome
