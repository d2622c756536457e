// Phase-aware joining (admission.join "spread"): where in the frame period a new caller's frame
// clock starts. Callers' frames recur every period at their own phase, so a run's phases are one
// draw that stays for the whole call: a bunched draw makes long steps for as long as those callers
// stay, and no controller can undo it without evicting. Here the period has kSlots equal slots,
// filled in bit-reversed order (0, 1/2, 1/4, 3/4, 1/8, ...: any first n of them are spread within
// a factor of two of evenly), each new caller taking the first of the least loaded; a departure's
// slot comes back in that order. The price is a join delay under one period.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/time.h"

namespace metronome {

class PhaseSpread {
 public:
  static constexpr int kBits = 10;
  static constexpr int64_t kSlots = int64_t{1} << kBits;  // 78 us apart at an 80 ms period

  // period >= kSlots nanoseconds (the scenario checks), so every slot has its own phase.
  explicit PhaseSpread(Time period) : period_(period), least_(2 * kSlots, 0) {}

  // The start of the frame clock of a caller admitted at `now`: the next instant at the phase of
  // target().
  Time place(Time now) const {
    Time delay = target() - now % period_;
    if (delay < 0) delay += period_;
    return now + delay;
  }
  // The phase of the first slot, in fill order, among the least loaded: the leftmost least leaf.
  Time target() const {
    size_t i = 1;
    while (i < kSlots) i = least_[2 * i] <= least_[2 * i + 1] ? 2 * i : 2 * i + 1;
    return start_of(fill_order()[i - kSlots]);
  }

  void add(Time start, int64_t count) { change(slot_of(start), count); }
  void remove(Time start, int64_t count) { change(slot_of(start), -count); }
  int64_t load_at(Time phase) const { return least_[leaf_of(slot_of(phase))]; }

 private:
  // Slot numbers in fill order: i's bits reversed, computed once for every spread. Reversing
  // twice gives i back, so it also maps a slot to its place in the fill order.
  static const std::vector<int64_t>& fill_order() {
    static const std::vector<int64_t> order = [] {
      std::vector<int64_t> o(kSlots);
      for (int64_t i = 0; i < kSlots; ++i) {
        for (int b = 0; b < kBits; ++b)
          o[static_cast<size_t>(i)] |= ((i >> b) & 1) << (kBits - 1 - b);
      }
      return o;
    }();
    return order;
  }
  static size_t leaf_of(size_t slot) { return kSlots + static_cast<size_t>(fill_order()[slot]); }
  void change(size_t slot, int64_t by) {
    size_t i = leaf_of(slot);
    least_[i] += by;
    for (i /= 2; i >= 1; i /= 2) least_[i] = std::min(least_[2 * i], least_[2 * i + 1]);
  }
  // Slot k starts at ceil(k T / kSlots); every phase in [start_of(k), start_of(k + 1)) is slot k.
  Time start_of(int64_t k) const { return (k * period_ + kSlots - 1) / kSlots; }
  size_t slot_of(Time t) const { return static_cast<size_t>((t % period_) * kSlots / period_); }

  Time period_;
  // A tree over the slots in fill order: leaf kSlots + p holds the live callers whose clock starts
  // in the p-th slot filled, each inner node i the least of its children 2i and 2i + 1, so the
  // first least loaded slot is a walk down (a scan of every slot per admission was a tenth of a
  // large cap's run).
  std::vector<int64_t> least_;
};

}  // namespace metronome
