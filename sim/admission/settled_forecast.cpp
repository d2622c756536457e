#include "sim/admission/settled_forecast.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/cost/pass_shape.h"
#include "sim/cost/step_time.h"

namespace metronome {

double periodic_latency_quantile(std::vector<ForecastCaller> callers, const ForecastShape& shape,
                                 const CostModel& cost, double q) {
  std::erase_if(callers, [](const ForecastCaller& c) { return c.count <= 0; });
  if (callers.empty()) return 0;
  std::stable_sort(
      callers.begin(), callers.end(),
      [](const ForecastCaller& a, const ForecastCaller& b) { return a.phase < b.phase; });
  constexpr size_t kPeriods = 4, kRecordFrom = 2;
  const size_t n = callers.size();
  // A release: a period and a caller of the sorted callers, stepped without dividing (a division
  // per release was a fifth of the replay).
  struct Release {
    size_t period = 0, caller = 0;
    bool operator==(const Release&) const = default;
  };
  auto at = [&](const Release& r) {
    return static_cast<Time>(r.period) * shape.period + callers[r.caller].phase;
  };
  auto step_on = [&](Release& r) {
    if (++r.caller == n) {
      r.caller = 0;
      ++r.period;
    }
  };
  std::vector<std::pair<double, int64_t>> latencies;  // (seconds, frames), recorded periods only
  latencies.reserve(n * (kPeriods - kRecordFrom));
  Release next;               // first release not yet served
  int64_t taken_of_next = 0;  // members of release `next` already served (a split cohort)
  Time now = 0;
  while (next.period < kPeriods) {
    now = std::max(now, at(next));
    FramePasses passes;
    int64_t members = 0;
    const Release first = next;
    const int64_t first_taken = taken_of_next;
    while (next.period < kPeriods && at(next) <= now && members < shape.max_batch) {
      const ForecastCaller& c = callers[next.caller];
      const int64_t take = std::min(c.count - taken_of_next, shape.max_batch - members);
      passes.add(take, shape.n_in, c.cached, shape.n_out, shape.window);
      members += take;
      taken_of_next += take;
      if (taken_of_next == c.count) {
        step_on(next);
        taken_of_next = 0;
      }
    }
    const Time end = now + step_duration(passes.seconds(cost), cost);
    // Every frame of this step is answered at its end.
    int64_t before = first_taken;
    for (Release k = first; k.period < kPeriods; step_on(k)) {
      const bool last = k == next;
      const int64_t frames = (last ? taken_of_next : callers[k.caller].count) - before;
      before = 0;
      if (frames > 0 && k.period >= kRecordFrom) {
        latencies.emplace_back(to_seconds(end - at(k)), frames);
      }
      if (last) break;
    }
    now = end;
  }
  int64_t frames = 0;
  for (const auto& l : latencies) frames += l.second;
  int64_t rank = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(q * static_cast<double>(frames))), 1, frames);
  // The latency at which the frames, smallest first, reach `rank`: a weighted selection, the
  // same answer as sorting (which took a third of a large-model recommend run) in linear time.
  auto lo = latencies.begin(), hi = latencies.end();
  for (;;) {
    const auto mid = lo + (hi - lo) / 2;
    std::nth_element(lo, mid, hi);
    int64_t below = 0;
    for (auto it = lo; it != mid; ++it) below += it->second;
    if (rank <= below) {
      hi = mid;
    } else if (rank <= below + mid->second) {
      return mid->first;
    } else {
      rank -= below + mid->second;
      lo = mid + 1;
    }
  }
}

}  // namespace metronome
