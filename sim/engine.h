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

#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "sim/admission/admission_controller.h"
#include "sim/block_counter.h"
#include "sim/cost/cost_model.h"
#include "sim/event_queue.h"
#include "sim/pool_sizing.h"
#include "sim/ring_queue.h"
#include "sim/rng.h"
#include "sim/run_observer.h"
#include "sim/run_result.h"
#include "sim/scenario.h"
#include "sim/session.h"
#include "sim/vllm_scheduler.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome {

class Engine {
 public:
  // `cost` and `observer` (which may be null) must outlive the engine.
  Engine(const Scenario& s, const CostModel& cost, RunObserver* observer = nullptr);
  // On a pool the caller sized already (size_pool(s), e.g. the first-order prediction's).
  Engine(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
         RunObserver* observer = nullptr);
  RunResult run();

  const PoolSizing& pool_sizing() const { return sizing_; }
  // Cohorts are an exact optimisation (tests compare runs with and without); on by default where
  // they apply: the stall policy without frame jitter.
  void set_cohorts(bool on) { cohorts_ = on && cohorts_; }

 private:
  struct Ticket {  // a reference to a session slot that survives the slot's reuse
    int64_t id;
    uint64_t incarnation;
    uint64_t seq;  // enqueue order (a split cohort's pieces keep their parent's)
  };
  struct Admission {  // an entry of the admission order; stale once the session is re-admitted
    int64_t id;
    int64_t order;
  };

  void on_arrival(Time now);
  void on_departure(int64_t id);
  void on_step_done(Time now);
  void on_control(Time now);
  int64_t silent_by(Time released_by, int64_t* due) const;
  void summarise_admission();
  void try_start_step(Time now);
  void vllm_start_step(Time now);
  void vllm_step_done(Time now);
  void note_exhaustion(Time now);
  void wake_at_next_release(Time now);
  bool reserve(const Ticket& t, Time now);
  bool preempt_newer_than(int64_t id, int64_t need, Time now);
  void preempt(int64_t id, Time now);
  void enqueue(int64_t id);
  int64_t new_slot();
  int64_t split(int64_t id, int64_t keep);
  bool absorb_into_back(int64_t id);
  bool valid(const Ticket& t) const {
    return incarnation_[t.id] == t.incarnation && sessions_[t.id].state != Session::State::kGone;
  }
  // The ready order: release, then enqueue order; pieces of one split cohort share both and follow
  // their admission order, so no two tickets compare equal.
  bool before(const Ticket& a, const Ticket& b) const {
    const Session& x = sessions_[a.id];
    const Session& y = sessions_[b.id];
    if (x.next_release != y.next_release) return x.next_release < y.next_release;
    if (a.seq != b.seq) return a.seq < b.seq;
    return x.admit_order < y.admit_order;
  }
  size_t block(const Ticket& t);
  Time release_time(const Session& s, int64_t frame);
  void serve_frame(Session& s, Time now, Time released);
  void count_unserved(const Session& s, int64_t due);
  int64_t frames_due_by(const Session& s, Time t) const;
  void sample_until(Time t);
  void fold_interval();
  void finish();

  const Scenario& scenario_;
  const CostModel& cost_;
  RunObserver* observer_;
  PoolSizing sizing_;
  BlockCounter pool_;
  kv::Window window_;

  // Scenario constants in engine units.
  Time period_, deadline_, silence_after_, horizon_, jitter_, sample_period_;
  kv::BlockSize block_size_;
  int64_t n_in_, n_out_, n_kv_, prompt_, max_batch_;
  bool preempt_policy_;
  bool cohorts_;
  // vllm_v1: vLLM's scheduler owns the steps and the blocks (in pool_); null for the frame
  // scheduler.
  std::unique_ptr<VllmScheduler> vllm_;
  VllmScheduler::StepPlan vllm_plan_;  // the running step

  Rng arrival_rng_, duration_rng_, jitter_rng_;
  std::unique_ptr<ArrivalProcess> arrivals_;
  std::unique_ptr<DurationDistribution> durations_;

  EventQueue events_;
  std::vector<Session> sessions_;
  std::vector<uint64_t> incarnation_;
  std::vector<int64_t> free_slots_;
  RingQueue<Ticket> ready_;             // sessions by next_release, oldest first
  std::vector<Admission> admit_stack_;  // admission order, for preempting the newest
  std::vector<Ticket> batch_;           // sessions in the running step
  std::vector<Ticket> kept_;            // scratch: ready sessions the step could not take
  // Frames that could not get blocks (stall policy), out of the ready queue until blocks are freed:
  // retrying them on every step would make a stalled engine quadratic in its sessions.
  std::vector<Ticket> blocked_;  // sorted like the ready queue
  size_t blocked_dead_ = 0;      // entries taken or departed, awaiting compaction
  size_t blocked_head_ = 0;      // entries before it are all dead
  int64_t released_seen_ = 0;
  // Blocks were freed and some blocked frame has not been tried since: the batch cap can end a pass
  // before the blocked queue is exhausted, and those frames must not wait for the next release.
  bool retry_blocked_ = false;
  uint64_t next_seq_ = 0;
  bool busy_ = false;
  bool step_wanted_ = false;  // try a step once this instant's events are all handled
  int64_t batch_members_ = 0;
  Time step_start_ = 0;
  Time wake_at_ = kNever;
  int64_t live_ = 0;
  int64_t stalled_ = 0;
  int64_t next_admit_order_ = 0;

  // Admission control: a cap on live sessions, and for adaptive controllers a control loop fed by a
  // per-interval latency histogram filled in serve_frame() (no event per frame).
  std::unique_ptr<AdmissionController> admission_;
  bool control_on_ = false;
  bool control_true_ = false;  // signal: true latency (padded frames censored) vs reported
  Time control_period_ = 0;
  double last_signal_s_ = std::numeric_limits<double>::quiet_NaN();  // the controller's last read
  LatencyHistogram control_hist_;  // frames answered within silence_after_s in the control interval
  int64_t silent_at_last_control_ = 0;
  int64_t interval_rejected_ = 0;
  // Caps after each control instant in the last half of the horizon (value -> intervals), and the
  // largest cap seen: bounded by the distinct caps, not by the horizon.
  std::map<int64_t, int64_t> last_half_caps_;
  std::map<int64_t, int64_t> last_half_live_;  // live sessions at those instants: N*
  int64_t max_cap_seen_ = 0;
  // Memory guard (AdmissionConfig::memory_guard): the worst-case blocks of every admitted session.
  bool memory_guard_ = false;
  int64_t reserved_ = 0;
  int64_t window_reserve_ = 0;  // windowed: the per-session bound
  // Frames due and on time over the last half of the horizon (for the missed-deadline flag).
  int64_t last_half_due_ = 0, last_half_on_time_ = 0;
  int64_t control_steps_ = 0, control_frames_ = 0;  // steps and frames served in the interval
  double settled_latency(double observed) const;
  int64_t reserve_for(const Session& s) const;

  RunResult result_;
  // Time-series state for the interval that ends at next_sample_.
  Time next_sample_;
  int64_t departed_due_ = 0;
  int64_t due_at_last_sample_ = 0;
  int64_t late_or_lost_ = 0;  // frames served after silence_after_s, or never (departed callers)
  int64_t silent_at_last_sample_ = 0;
  Sample interval_;
  LatencyHistogram interval_answered_;  // reported latency of frames answered in time
  LatencyHistogram interval_true_;
  int64_t interval_late_ = 0;  // frames served after silence_after_s in the interval
};

// Convenience: size the pool, build the cost model the scenario names, run one seed.
RunResult simulate(const Scenario& s, RunObserver* observer = nullptr);
// The same on a cost model the caller built (once for many runs: a sweep, a capacity search).
RunResult simulate(const Scenario& s, const CostModel& cost, RunObserver* observer = nullptr);
RunResult simulate(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
                   RunObserver* observer = nullptr);

}  // namespace metronome
