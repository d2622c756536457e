// Phase-aware joining (admission.join "spread"): where in the frame period a new caller's frame
// clock starts. Callers' frames recur every period at their own phase, so a run's phases are one
// draw that stays for the whole call: a bunched draw makes long steps for as long as those callers
// stay, and no controller can undo it without evicting. Here the period has kSlots equal slots,
// filled in bit-reversed order (0, 1/2, 1/4, 3/4, 1/8, ...: any first n of them are spread within
// a factor of two of evenly), each new caller taking the first of the least loaded; a departure's
// slot comes back in that order. The price is a join delay under one period.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace metronome {

class PhaseSpread {
 public:
  static constexpr int kBits = 10;
  static constexpr int64_t kSlots = int64_t{1} << kBits;  // 78 us apart at an 80 ms period

  // period >= kSlots nanoseconds (the scenario checks), so every slot has its own phase.
  explicit PhaseSpread(Time period) : period_(period), load_(kSlots, 0) {}

  // The start of the frame clock of a caller admitted at `now`: the next instant at the phase of
  // target().
  Time place(Time now) const {
    Time delay = target() - now % period_;
    if (delay < 0) delay += period_;
    return now + delay;
  }
  // The phase of the first slot, in fill order, among the least loaded.
  Time target() const {
    int64_t best = 0;
    for (int64_t i = 1; i < kSlots; ++i) {
      if (load_[static_cast<size_t>(reversed(i))] < load_[static_cast<size_t>(reversed(best))]) {
        best = i;
      }
    }
    return start_of(reversed(best));
  }

  void add(Time start, int64_t count) { load_[slot_of(start)] += count; }
  void remove(Time start, int64_t count) { load_[slot_of(start)] -= count; }
  int64_t load_at(Time phase) const { return load_[slot_of(phase)]; }

 private:
  static int64_t reversed(int64_t i) {
    int64_t r = 0;
    for (int b = 0; b < kBits; ++b) r |= ((i >> b) & 1) << (kBits - 1 - b);
    return r;
  }
  // Slot k starts at ceil(k T / kSlots); every phase in [start_of(k), start_of(k + 1)) is slot k.
  Time start_of(int64_t k) const { return (k * period_ + kSlots - 1) / kSlots; }
  size_t slot_of(Time t) const { return static_cast<size_t>((t % period_) * kSlots / period_); }

  Time period_;
  std::vector<int64_t> load_;  // live callers whose clock starts in each slot
};

}  // namespace metronome
