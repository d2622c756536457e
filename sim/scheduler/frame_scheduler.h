// engine.scheduler "frame": Metronome's frame scheduler. Each step serves, in release order, every
// session whose next frame is ready (up to max_sessions_per_step): it reserves the frame's blocks,
// runs one continuous batch whose duration the cost model gives, then frees the blocks that fell
// out of the window. A frame that cannot get blocks follows the exhaustion policy
// (sim/exhaustion/): `stall` (it waits; the engine produces nothing for it) or `preempt_recompute`
// (the newest session is evicted and later recomputes its history). Every rule of a frame is
// FrameRule's (sim/engine/frame_rule.h): the one-by-one path, the bulk take of usual callers and
// the usual ring (usual_ring.h: the ready queue while every queued caller is usual) all call it.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "sim/cost/pass_shape.h"
#include "sim/exhaustion/exhaustion_policy.h"
#include "sim/scheduler/step_scheduler.h"
#include "sim/scheduler/usual_ring.h"

namespace metronome {

class FrameScheduler final : public StepScheduler, private ExhaustionSite {
 public:
  explicit FrameScheduler(EngineCore& core);

  void open(int64_t id) override;
  void close(int64_t id) override;
  std::optional<Time> start_step(Time now) override;
  void end_step(Time now) override;
  int64_t step_members() const override { return batch_members_; }

  void sync() override;
  void flush() override;
  // On by default where cohorts apply: the stall policy without frame jitter.
  void set_cohorts(bool on) override { cohorts_ = on && cohorts_; }
  // On by default where the ring applies: without frame jitter.
  void set_usual_ring(bool on) override { ring_on_ = on && ring_on_; }

 private:
  struct Admission {  // an entry of the admission order; stale once the session is re-admitted
    int64_t id;
    int64_t order;
  };
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

  [[gnu::always_inline]] void enqueue(int64_t id) {
    if (core_.sessions[id].twin && absorb_into_back(id)) return;
    core_.queue(id);
  }
  int64_t split(int64_t id, int64_t keep);
  bool absorb_into_back(int64_t id);
  int64_t choose_batch(Time now);
  bool take(const Ticket& t, Time now);
  void take_usual_run(Time now);
  template <bool kWindow>
  void take_usual_run(Time now);
  bool reserve(const Ticket& t, Time now);
  size_t block(const Ticket& t);
  template <bool kJitter, bool kWindow>
  void end_members(Time now);
  // The usual ring (usual_ring.h): entered when every queued caller is usual, left (its copies
  // written back) on flush or when a step does what a turn cannot hold.
  bool enter_ring(Time now);
  void write_back(const UsualRing::Caller& c);
  void leave_ring();
  template <bool kWindow>
  bool take_ring(Time now);
  template <bool kWindow>
  void end_ring(Time now);
  // ExhaustionSite: what the exhaustion policy may do.
  bool evict_newer_than(int64_t id, int64_t need, Time now) override;
  void evict(int64_t id, Time now) override;

  EngineCore& core_;
  int64_t max_batch_;
  const ExhaustionPolicy& exhaustion_;
  bool keeps_admission_order_;  // the policy evicts newest first
  bool cohorts_;
  // Only callers arriving at the same instant can ever merge (Session::twin): the last admitted
  // arrival, to mark it when the next one shares its instant.
  Time last_arrival_ = kNever;
  int64_t last_arrival_id_ = 0;
  uint32_t last_arrival_incarnation_ = 0;
  size_t stale_departures_ = 0;         // retired slots' departures still queued (absorb_into_back)
  std::vector<Admission> admit_stack_;  // admission order, for preempting the newest

  Batch batch_;  // sessions in the running step
  int64_t batch_members_ = 0;
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

  UsualRing ring_;
  bool ring_on_;
  Time ring_try_at_ = 0;  // a failed try to enter the ring waits until then
  size_t ring_step_ = 0;  // callers of the running step taken from the ring's head
};

}  // namespace metronome
