// Phase-aware joining (admission.join "spread"): where in the frame period a new caller's frame
// clock starts. Callers' frames recur every period at their own phase, so a run's phases are one
// draw that stays for the whole call: a bunched draw makes long steps for as long as those callers
// stay, and no controller can undo it without evicting. Starting each new caller's clock in the
// middle of the widest gap between the live callers' phases keeps them close to evenly spread, the
// regime the deadline cap is probed at, for a join delay under one period.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "sim/time.h"

namespace metronome {

class PhaseSpread {
 public:
  explicit PhaseSpread(Time period) : period_(period) {}

  // The start of the frame clock of a caller admitted at `now`: the middle of the widest gap (the
  // earliest of equals), or `now` when no caller is live.
  Time place(Time now) const {
    if (phases_.empty()) return now;
    Time delay = target() - now % period_;
    if (delay < 0) delay += period_;
    return now + delay;
  }
  // The phase place() aims at; phases_ must not be empty.
  Time target() const {
    const auto& [len, start] = *gaps_.begin();
    return (start + len / 2) % period_;
  }

  void add(Time start, int64_t count) {
    const Time p = start % period_;
    if (auto [it, fresh] = phases_.try_emplace(p, count); !fresh) {
      it->second += count;
      return;
    }
    if (phases_.size() == 1) {
      gaps_.insert({period_, p});
      return;
    }
    const auto [a, b] = neighbours(p);
    gaps_.erase({gap(a, b), a});
    gaps_.insert({gap(a, p), a});
    gaps_.insert({gap(p, b), p});
  }

  void remove(Time start, int64_t count) {
    const Time p = start % period_;
    const auto it = phases_.find(p);
    if (it == phases_.end() || (it->second -= count) > 0) return;
    if (phases_.size() == 1) {
      phases_.clear();
      gaps_.clear();
      return;
    }
    const auto [a, b] = neighbours(p);
    gaps_.erase({gap(a, p), a});
    gaps_.erase({gap(p, b), p});
    phases_.erase(it);
    gaps_.insert({gap(a, b), a});
  }

  size_t phases() const { return phases_.size(); }

 private:
  // The gap from phase a forward to phase b (a whole period when they are the same phase).
  Time gap(Time a, Time b) const { return b > a ? b - a : b - a + period_; }
  // The live phases before and after p on the circle (p itself excluded).
  std::pair<Time, Time> neighbours(Time p) const {
    auto it = phases_.find(p);
    const Time before = it == phases_.begin() ? phases_.rbegin()->first : std::prev(it)->first;
    const auto next = std::next(it);
    const Time after = next == phases_.end() ? phases_.begin()->first : next->first;
    return {before, after};
  }

  struct Wider {  // widest first, then earliest start: one deterministic order
    bool operator()(const std::pair<Time, Time>& x, const std::pair<Time, Time>& y) const {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    }
  };

  Time period_;
  std::map<Time, int64_t> phases_;               // live callers' phases -> callers
  std::set<std::pair<Time, Time>, Wider> gaps_;  // (length, start) of the gap after each phase
};

}  // namespace metronome
