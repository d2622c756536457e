// The simulator's one priority queue of events.
//
// Order of events at the same instant (written once, pinned by tests/sim/event_queue_test.cpp):
//   1. StepDone    a finished step delivers its frames (also to a caller hanging up at that
//                  instant: vLLM's update_from_output runs before the next iteration sees the
//                  abort), frees window blocks and releases its sessions' next frames;
//   2. Departure   a caller who hangs up frees blocks before anything at that instant allocates;
//   3. Control     the admission controller closes its interval after every frame served at that
//                  instant, and sets the cap before callers arriving at that instant are admitted;
//   4. Arrival     a new caller is admitted (or rejected at the cap) and its first frame is ready;
//   5. EngineWake  the idle engine looks for ready frames last, so it sees all of the above.
// Events of the same kind and time run in the order they were scheduled (sequence number). The
// engine starts a step only after every event of an instant is handled (Engine::run).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "base/time.h"

namespace metronome {

enum class EventKind : uint8_t {
  kStepDone = 0,
  kDeparture = 1,
  kControl = 2,
  kArrival = 3,
  kEngineWake = 4
};

struct Event {
  Time time;
  // The kind in the top byte above the scheduling order: one comparison orders both, and the event
  // (one per live caller, for its departure) takes 32 bytes, not 40.
  uint64_t key;
  int64_t target;        // session id for departures; unused otherwise
  uint64_t incarnation;  // of the target's slot: a departure for a reused or merged slot is stale

  static constexpr int kKindShift = 56;
  EventKind kind() const { return static_cast<EventKind>(key >> kKindShift); }
  uint64_t seq() const { return key & ((uint64_t{1} << kKindShift) - 1); }

  // Min-heap order: earlier time, then kind, then scheduling order.
  friend bool operator>(const Event& a, const Event& b) {
    if (a.time != b.time) return a.time > b.time;
    return a.key > b.key;
  }
};

// The engine's step is pushed and popped once per step, while the heap holds a departure per live
// caller: one step-done event waits in a slot beside the heap instead of going through it. The
// order is the same total order either way.
class EventQueue {
 public:
  void push(Time time, EventKind kind, int64_t target = 0, uint64_t incarnation = 0) {
    const Event e{time, (static_cast<uint64_t>(kind) << Event::kKindShift) | next_seq_++, target,
                  incarnation};
    if (kind == EventKind::kStepDone && !has_slot_) {
      slot_ = e;
      has_slot_ = true;
    } else {
      heap_.push(e);
    }
  }
  bool empty() const { return heap_.empty() && !has_slot_; }
  const Event& top() const { return slot_first() ? slot_ : heap_.top(); }
  Event pop() {
    if (slot_first()) {
      has_slot_ = false;
      return slot_;
    }
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  size_t size() const { return heap_.size() + (has_slot_ ? 1 : 0); }
  // Drops the heap's events that `dead(e)` says are stale (a retired slot's departure) and
  // rebuilds it. The rest keep their keys, so the order of what is popped is unchanged.
  template <class Dead>
  void remove_if(Dead dead) {
    std::vector<Event> kept;
    kept.reserve(heap_.size());
    for (; !heap_.empty(); heap_.pop()) {
      if (!dead(heap_.top())) kept.push_back(heap_.top());
    }
    heap_ = decltype(heap_)(std::greater<>(), std::move(kept));
  }

 private:
  bool slot_first() const { return has_slot_ && (heap_.empty() || heap_.top() > slot_); }

  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap_;
  Event slot_{};
  bool has_slot_ = false;
  uint64_t next_seq_ = 0;
};

}  // namespace metronome
