// The frame scheduler's queue of sessions waiting for their next frame, in service order: release
// time, then enqueue order, then admission order (the pieces of one split cohort share the first
// two). Each ticket carries its key, so a ticket whose slot was reused still sorts where it was
// put.
//
// Releases come almost in order (a served session's next frame is one period after its last), so
// most tickets go to the back of a sorted ring; the few that do not (an arrival, whose first frame
// is due before every queued one; a frame served late) wait in a small heap, and the front is the
// earlier of the two. Every operation is O(1) or O(log heap): a ring alone would shift O(live)
// tickets per arrival.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/time.h"
#include "sim/engine/ring_queue.h"

namespace metronome {

struct Ticket {  // a reference to a session slot that survives the slot's reuse
  int32_t id;
  uint32_t incarnation;  // kTaken: a tombstone
  uint64_t seq;          // enqueue order (a split cohort's pieces keep their parent's)
  Time release;          // the session's next_release when queued
  int64_t order;         // the session's admit_order when queued
};

inline constexpr uint32_t kTaken = ~uint32_t{0};

// Service order; no two live tickets compare equal.
inline bool earlier(const Ticket& a, const Ticket& b) {
  if (a.release != b.release) return a.release < b.release;
  if (a.seq != b.seq) return a.seq < b.seq;
  return a.order < b.order;
}

class ReadyQueue {
 public:
  // Where a ticket enqueued after every queued one goes (push_fresh): behind the ring's back, whose
  // release is `back` (the least Time for an empty ring), unless it is released earlier.
  static bool goes_behind(Time back, Time release) { return release >= back; }

  bool empty() const { return ring_.empty() && heap_.empty(); }
  // Every ticket is in the sorted ring (none waits in the heap).
  bool all_in_order() const { return heap_.empty(); }
  void clear() {
    ring_.clear();
    heap_.clear();
  }
  size_t size() const { return ring_.size() + heap_.size(); }
  const Ticket& front() const { return from_heap() ? heap_.front() : ring_.front(); }
  // The front ticket, or null when empty.
  const Ticket* peek() const {
    if (from_heap()) return &heap_.front();
    return ring_.empty() ? nullptr : &ring_.front();
  }
  // The session k places behind the ring's front (a prefetch hint), or -1.
  int64_t id_ahead(size_t k) const { return k < ring_.size() ? ring_[k].id : -1; }
  // The last in service order (every ticket in the heap sorts before the ring's back).
  const Ticket& back() const { return ring_.back(); }
  void pop_front() {
    if (from_heap()) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      heap_.pop_back();
    } else {
      ring_.pop_front();
    }
  }
  // The tickets at the ring's front released by run_bound() come before every heap ticket (all of
  // the ring while the heap is empty; ties in release go to the one-by-one path): the engine takes
  // them in bulk, reading the k-th with run_at(k) and popping the first n with pop_run(n).
  Time run_bound() const {
    return heap_.empty() ? std::numeric_limits<Time>::max() : heap_.front().release - 1;
  }
  size_t ring_size() const { return ring_.size(); }
  const Ticket& run_at(size_t k) const { return ring_[k]; }
  // run_at for a loop's locals (RingQueue::View); valid until the queue changes.
  RingQueue<Ticket>::View run() const { return RingQueue<Ticket>::View(ring_); }
  void pop_run(size_t n) { ring_.pop_front(n); }
  [[gnu::always_inline]] void push(const Ticket& t) {
    if (ring_.empty() || !earlier(t, ring_.back())) [[likely]] {
      ring_.push_back(t);
    } else {
      push_heap(t);
    }
  }
  // A ticket enqueued after every queued one (seq larger than theirs): it goes behind the ring's
  // back unless it is released earlier.
  [[gnu::always_inline]] void push_fresh(const Ticket& t) {
    if (ring_.empty() || goes_behind(ring_.back().release, t.release)) [[likely]] {
      ring_.push_back(t);
    } else {
      push_heap(t);
    }
  }
  // push_fresh for up to n tickets, with the ring's fields and its back's release in the caller's
  // locals (RingQueue::Appender). The queue sees the ring's new tickets once publish() is called.
  class Appender {
   public:
    Appender(ReadyQueue& q, size_t n)
        : q_(q),
          ring_(q.ring_, n),
          back_(q.ring_.empty() ? std::numeric_limits<Time>::min() : q.ring_.back().release) {}
    [[gnu::always_inline]] void push_fresh(const Ticket& t) {
      if (goes_behind(back_, t.release)) [[likely]] {
        // Field by field: a copy of the whole ticket went through a temporary on the stack, whose
        // 16-byte reload of its 4- and 8-byte stores could not be forwarded (a stall per frame).
        Ticket& b = ring_.push_back();
        b.id = t.id;
        b.incarnation = t.incarnation;
        b.seq = t.seq;
        b.release = t.release;
        b.order = t.order;
        back_ = t.release;
      } else {
        q_.push_heap(t);
      }
    }
    void publish() { ring_.publish(); }

   private:
    ReadyQueue& q_;
    RingQueue<Ticket>::Appender ring_;
    Time back_;  // the ring's back's release (the least Time while it is empty)
  };
  // A ticket known to come before every queued one (the rest of a cohort split at the front).
  void push_front(const Ticket& t) {
    if (ring_.empty() || !earlier(ring_.front(), t)) {
      ring_.push_front(t);
    } else {
      push(t);
    }
  }

 private:
  static bool later(const Ticket& a, const Ticket& b) { return earlier(b, a); }
  [[gnu::noinline]] void push_heap(const Ticket& t) {
    heap_.push_back(t);
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  bool from_heap() const {
    return !heap_.empty() && (ring_.empty() || earlier(heap_.front(), ring_.front()));
  }

  RingQueue<Ticket> ring_;    // sorted
  std::vector<Ticket> heap_;  // min-heap of the tickets that did not fit the ring's back
};

}  // namespace metronome
