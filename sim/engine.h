// One serving engine running real-time sessions over a paged KV block pool: the discrete-event
// core.
//
// Events are arrivals, departures and engine steps, never tokens. Each step serves, in release
// order, every session whose next frame is ready (up to max_sessions_per_step): it reserves the
// frame's blocks, runs one continuous batch whose duration the cost model gives, then frees the
// blocks that fell out of the window. A frame that cannot get blocks follows the exhaustion policy:
// `stall` (it waits; the engine produces nothing for it) or `preempt_recompute` (vLLM V1: the
// newest session is evicted and later recomputes its history). With engine.scheduler vllm_v1 the
// steps are vLLM V1's iterations instead (sim/vllm_scheduler.h). The serving layer pads any frame
// without output by silence_after_s with silence, so the reported latency stays bounded while users
// hear nothing.
#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "base/rng.h"
#include "sim/admission/admission_gate.h"
#include "sim/block_counter.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/pass_shape.h"
#include "sim/event_queue.h"
#include "sim/frame_ledger.h"
#include "sim/frame_rule.h"
#include "sim/pool_sizing.h"
#include "sim/ready_queue.h"
#include "sim/run_observer.h"
#include "sim/run_result.h"
#include "sim/scenario.h"
#include "sim/session.h"
#include "sim/vllm_scheduler.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome {

class Engine final : private ExhaustionSite {
 public:
  // `cost` and `observer` (which may be null) must outlive the engine.
  Engine(const Scenario& s, const CostModel& cost, RunObserver* observer = nullptr);
  // On a pool the caller sized already (size_pool(s), e.g. the first-order prediction's).
  Engine(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
         RunObserver* observer = nullptr);
  RunResult run();

  // Several engines on one clock (sim/fleet/fleet.h): the fleet draws the arrivals and each call's
  // length from the scenario's streams and places each call on one engine, which then draws
  // neither. place_arrivals() before begin(); then advance() and place() in time order; then end().
  // run() is begin() and end() on the engine's own arrivals, so both paths share one loop.
  void place_arrivals() { placed_ = true; }
  void begin();
  // Handles every event before `until`, and at `until` those that come before an arrival (the
  // fleet is about to place one there) or, without `arrival_at_until`, all of them.
  void advance(Time until, bool arrival_at_until);
  using Placement = AdmissionGate::Verdict;
  // A call arriving at `now`, after advance(now, true); its drawn length in seconds.
  Placement place(Time now, double duration_s);
  RunResult end();
  // What a gateway's router and shedder read.
  EngineGauges gauges() const;
  int64_t pool_blocks() const { return pool_.capacity(); }
  Time last_step() const { return last_step_; }  // the duration of the last step that ended
  // When the last call admitted so far hangs up (kNever: one outlives the run; 0: none yet): a
  // replica that takes no more calls is empty from then on.
  Time last_hang_up() const { return last_hang_up_; }

  // Cohorts are an exact optimisation (tests compare runs with and without); on by default where
  // they apply: the stall policy without frame jitter. Set before run().
  void set_cohorts(bool on) { cohorts_ = on && cohorts_; }

 private:
  struct Admission {  // an entry of the admission order; stale once the session is re-admitted
    int64_t id;
    int64_t order;
  };

  void on_arrival(Time now);
  Placement admit(Time now, double duration_s);
  // True once nothing else can happen at instant t: no event is queued there, and no arrival will
  // be placed there (advance's `until` and `arrival_at_until`).
  bool instant_over(Time t) const {
    return (events_.empty() || events_.top().time != t) && t != external_at_;
  }
  void on_departure(int64_t id);
  void on_step_done(Time now);
  template <bool kJitter, bool kWindow>
  void end_members(Time now);
  void on_control(Time now);
  void try_start_step(Time now);
  int64_t choose_batch(Time now);
  bool take(const Ticket& t, Time now);
  void take_usual_run(Time now);
  template <bool kWindow>
  void take_usual_run(Time now);
  double pass_seconds() const;
  void start_step(Time now, double seconds);
  void vllm_start_step(Time now);
  void vllm_step_done(Time now);
  void note_exhaustion(Time now);
  void wake_at_next_release(Time now);
  bool reserve(const Ticket& t, Time now);
  // ExhaustionSite: what the exhaustion policy may do.
  bool evict_newer_than(int64_t id, int64_t need, Time now) override;
  void evict(int64_t id, Time now) override;
  [[gnu::always_inline]] void enqueue(int64_t id) {
    if (sessions_[id].twin && absorb_into_back(id)) return;
    ready_.push_fresh(ticket(id, next_seq_++));
  }
  Ticket ticket(int64_t id, uint64_t seq) const {
    const Session& s = sessions_[id];
    return {static_cast<int32_t>(id), s.incarnation, seq, s.next_release, s.admit_order};
  }
  int64_t new_slot();
  // A slot's next incarnation; never the tombstone of a taken blocked frame.
  void next_incarnation(int64_t id) {
    uint32_t& i = sessions_[id].incarnation;
    if (++i == kTaken) ++i;
  }
  int64_t split(int64_t id, int64_t keep);
  bool absorb_into_back(int64_t id);
  // A slot's incarnation moves on when its session leaves or merges and when the slot is reused,
  // so a ticket or step member from before is stale by this one test.
  bool valid(const Ticket& t) const { return sessions_[t.id].incarnation == t.incarnation; }
  // Sessions are visited in release order, which is random in their slots: with many live sessions
  // each visit would wait for memory, so the loops over a batch or the queue fetch a few ahead
  // once the slots outgrow the core's caches (below that the hints are pure cost).
  static constexpr size_t kAhead = 16;
  static constexpr size_t kPrefetchFromSlots = 4096;  // 4096 x 104-byte sessions: 416 KiB
  bool far() const { return sessions_.size() >= kPrefetchFromSlots; }
  void prefetch(int64_t id) const {  // the first and last cache lines of the per-frame fields
    const Session& s = sessions_[id];
    __builtin_prefetch(&s.frames_total);
    __builtin_prefetch(reinterpret_cast<const char*>(&s + 1) - 1);
  }
  void purge_ready_front() {
    while (!ready_.empty() && !valid(ready_.front())) ready_.pop_front();
  }
  size_t block(const Ticket& t);
  Time release_time(const Session& s, int64_t frame);
  void finish();

  const Scenario& scenario_;
  const CostModel& cost_;
  RunObserver* observer_;
  BlockCounter pool_;

  // Scenario constants in engine units.
  Time period_, horizon_, jitter_;
  int64_t n_in_, n_out_, max_batch_;
  const ExhaustionPolicy& exhaustion_;
  bool keeps_admission_order_;  // the policy evicts newest first (never with vllm_v1)
  bool cohorts_;
  FrameRule rule_;  // on the constants above and the workload's kv::FrameGrowth
  // Only callers arriving at the same instant can ever merge (Session::twin): the last admitted
  // arrival, to mark it when the next one shares its instant.
  Time last_arrival_ = kNever;
  int64_t last_arrival_id_ = 0;
  uint32_t last_arrival_incarnation_ = 0;
  // vllm_v1: vLLM's scheduler owns the steps and the blocks (in pool_); null for the frame
  // scheduler.
  std::unique_ptr<VllmScheduler> vllm_;
  VllmScheduler::StepPlan vllm_plan_;  // the running step

  Rng arrival_rng_, duration_rng_, jitter_rng_;
  std::unique_ptr<ArrivalProcess> arrivals_;
  std::unique_ptr<DurationDistribution> durations_;

  EventQueue events_;
  std::vector<Session> sessions_;
  size_t stale_departures_ = 0;  // retired slots' departures still queued (absorb_into_back)
  std::vector<int64_t> free_slots_;
  ReadyQueue ready_;                    // sessions waiting for their next frame
  std::vector<Admission> admit_stack_;  // admission order, for preempting the newest
  // A member of the running step: its slot, whose incarnation step end checks (it may have left
  // or merged meanwhile). Eight bytes, not a ticket's 32: the step's batch stays in the cache.
  struct Member {
    int32_t id;
    uint32_t incarnation;
  };
  // The running step's members in take order. The bulk take writes a run through a pointer to
  // the tail: a vector's push_back cost it a dozen instructions per frame, and resizing one first
  // would zero-fill it.
  class Batch {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    const Member* data() const { return buf_.get(); }
    void clear() { size_ = 0; }
    // Room for n more members past size(), which added(k) then counts (k <= n).
    Member* tail(size_t n) {
      if (n > cap_ - size_) grow(size_ + n);
      return buf_.get() + size_;
    }
    void added(size_t k) { size_ += k; }
    void push_back(Member m) {
      *tail(1) = m;
      ++size_;
    }

   private:
    void grow(size_t n) {
      const size_t cap = std::max(n, 2 * cap_);
      auto bigger = std::make_unique_for_overwrite<Member[]>(cap);
      std::copy_n(buf_.get(), size_, bigger.get());
      buf_ = std::move(bigger);
      cap_ = cap;
    }
    std::unique_ptr<Member[]> buf_;
    size_t size_ = 0, cap_ = 0;
  };
  Batch batch_;               // sessions in the running step
  std::vector<Ticket> kept_;  // scratch: ready sessions the step could not take
  FramePasses passes_;        // the forward passes of batch_
  // Frames that could not get blocks (stall policy), out of the ready queue until blocks are freed:
  // retrying them on every step would make a stalled engine quadratic in its sessions.
  std::vector<Ticket> blocked_;  // in service order
  size_t blocked_dead_ = 0;      // entries taken or departed, awaiting compaction
  size_t blocked_head_ = 0;      // entries before it are all dead
  int64_t released_seen_ = 0;
  // Blocks were freed and some blocked frame has not been tried since: the batch cap can end a pass
  // before the blocked queue is exhausted, and those frames must not wait for the next release.
  bool retry_blocked_ = false;
  uint64_t next_seq_ = 0;
  bool busy_ = false;
  // Placed arrivals (place_arrivals): the instant of the arrival the fleet may place next (kNever:
  // none pending); the instant last handled.
  bool placed_ = false;
  Time external_at_ = kNever;
  Time now_ = 0;
  Time last_step_ = 0;
  Time last_hang_up_ = 0;
  bool step_wanted_ = false;  // try a step once this instant's events are all handled
  int64_t batch_members_ = 0;
  Time step_start_ = 0;
  Time wake_at_ = kNever;
  int64_t live_ = 0;
  int64_t stalled_ = 0;
  int64_t next_admit_order_ = 0;

  // Who gets in and when their clocks start; the control loop's instants (sim/admission/).
  AdmissionGate gate_;

  RunResult result_;
  FrameLedger ledger_;
};

// Convenience: size the pool, build the cost model the scenario names, run one seed.
RunResult simulate(const Scenario& s, RunObserver* observer = nullptr);
// The same on a cost model the caller built (once for many runs: a sweep, a capacity search).
RunResult simulate(const Scenario& s, const CostModel& cost, RunObserver* observer = nullptr);
RunResult simulate(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
                   RunObserver* observer = nullptr);

}  // namespace metronome
