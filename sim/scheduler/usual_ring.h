// The frame scheduler's ready queue while every queued caller is usual (Session::usual_single, and
// no twin that could merge into a cohort): their per-frame fields, in service order, in one array.
//
// A served usual caller goes back to the queue's back one period later, so in that regime the
// queue only turns: a step takes the callers at the head and, once served, they are the back
// without moving. The scheduler runs the same rule calls on these copies as on the sessions
// (FrameRule::join_run, serve_frame) and copies them back, into the sessions and the ticket
// queue, whenever anything else is to read or change the sessions (StepScheduler::flush), or a
// step does what a turn cannot hold (a caller short of blocks, a caller's last frame, a frame that
// the ticket queue would not put at its back). Tickets, slots and their checks cost about as much
// per frame as the rule itself; here a frame costs the rule.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/time.h"

namespace metronome {

class UsualRing {
 public:
  struct Caller {  // Session's per-frame fields, by the same names, and its slot
    Time next_release;
    int64_t ctx, held, next_frame, frames_total;
    int32_t id;
  };

  bool active() const { return !callers_.empty(); }
  size_t size() const { return callers_.size(); }
  // The caller k places behind the head (k < size()).
  Caller& at(size_t k) {
    const size_t i = head_ + k;
    return callers_[i < callers_.size() ? i : i - callers_.size()];
  }
  void push_back(const Caller& c) { callers_.push_back(c); }
  void clear() {
    callers_.clear();
    head_ = 0;
  }
  // Calls f on callers from the head while it returns true, at most `limit` (<= size()) of them;
  // returns how many it returned true for.
  template <class F>
  size_t take_while(size_t limit, F&& f) {
    size_t k = 0;
    for (const auto& [from, to] : spans(limit)) {
      for (Caller* c = from; c != to; ++c, ++k) {
        if (!f(*c)) return k;
      }
    }
    return k;
  }
  // Calls f on the first k (<= size()) callers from the head.
  template <class F>
  void for_run(size_t k, F&& f) {
    for (const auto& [from, to] : spans(k)) {
      for (Caller* c = from; c != to; ++c) f(*c);
    }
  }
  // Turns the ring past its first k (<= size()) callers: they are its back.
  void turn(size_t k) {
    head_ += k;
    if (head_ >= callers_.size()) head_ -= callers_.size();
  }

 private:
  struct Span {
    Caller *from, *to;
  };
  // The first k callers from the head: up to the array's end, then from its start.
  std::array<Span, 2> spans(size_t k) {
    Caller* const base = callers_.data();
    const size_t first = std::min(k, callers_.size() - head_);
    return {{{base + head_, base + head_ + first}, {base, base + (k - first)}}};
  }

  std::vector<Caller> callers_;
  size_t head_ = 0;
};

}  // namespace metronome
