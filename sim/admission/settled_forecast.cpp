#include "sim/admission/settled_forecast.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/cost/pass_shape.h"
#include "sim/cost/step_time.h"

namespace metronome {
namespace {

// The value at which the (value, frames) pairs, smallest first, reach `rank` frames: a weighted
// selection, the same answer as sorting in linear time. Reorders `v`.
Time weighted_select(std::vector<std::pair<Time, int64_t>>& v, int64_t rank) {
  auto lo = v.begin(), hi = v.end();
  for (;;) {
    const auto mid = lo + (hi - lo) / 2;
    // By value alone: which of two equal values comes first cannot change the answer.
    std::nth_element(lo, mid, hi, [](const auto& a, const auto& b) { return a.first < b.first; });
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

}  // namespace

double periodic_latency_quantile(std::vector<ForecastCaller> callers, const ForecastShape& shape,
                                 const CostModel& cost, double q) {
  std::erase_if(callers, [](const ForecastCaller& c) { return c.count <= 0; });
  if (callers.empty()) return 0;
  if (!std::is_sorted(callers.begin(), callers.end(), earlier_phase)) {
    std::stable_sort(callers.begin(), callers.end(), earlier_phase);
  }
  constexpr size_t kPeriods = 4, kRecordFrom = 2;
  const size_t n = callers.size(), total = kPeriods * n;
  // The releases of the replayed periods in time order, laid out once: release k is caller k % n
  // in period k / n (a division per release, or stepping a (period, caller) pair, was most of the
  // replay's loops).
  struct Release {
    Time at;
    int64_t count, cached;
  };
  std::vector<Release> releases(total);
  for (size_t p = 0; p < kPeriods; ++p) {
    for (size_t c = 0; c < n; ++c) {
      releases[p * n + c] = {static_cast<Time>(p) * shape.period + callers[c].phase,
                             callers[c].count, callers[c].cached};
    }
  }
  const int64_t twice_cap = twice_keys_cap(shape.window);
  // The recorded periods' frames: each release's time until its step ends (whole nanoseconds) and
  // how many frames it stands for. A release is written as the step takes it and turned into a
  // latency at the step's end.
  std::vector<Time> latency;
  std::vector<int64_t> frames_of;
  latency.reserve(n * (kPeriods - kRecordFrom));
  frames_of.reserve(n * (kPeriods - kRecordFrom));
  size_t next = 0;            // first release not yet served
  int64_t taken_of_next = 0;  // members of release `next` already served (a split cohort)
  Time now = 0;
  while (next < total) {
    now = std::max(now, releases[next].at);
    // The step's members priced by their sums, as the frame scheduler's bulk take prices a run
    // (FramePasses::add_run: the sums are whole numbers, so it equals a member-by-member add).
    int64_t members = 0, sum_cached = 0, sum_twice_keys = 0;
    const size_t from = latency.size();
    while (next < total && releases[next].at <= now && members < shape.max_batch) {
      const Release& r = releases[next];
      const int64_t take = std::min(r.count - taken_of_next, shape.max_batch - members);
      members += take;
      sum_cached += take * r.cached;
      sum_twice_keys += take * twice_keys_per_query(shape.n_in, r.cached, twice_cap);
      if (next >= kRecordFrom * n) {  // answered at the step's end, below
        latency.push_back(r.at);
        frames_of.push_back(take);
      }
      taken_of_next += take;
      if (taken_of_next == r.count) {
        ++next;
        taken_of_next = 0;
      }
    }
    FramePasses passes;
    passes.add_run(members, shape.n_in, sum_cached, static_cast<double>(sum_twice_keys),
                   shape.n_out);
    const Time end = now + step_duration(passes.seconds(cost), cost);
    // Every frame of this step is answered at its end.
    for (size_t i = from; i < latency.size(); ++i) latency[i] = end - latency[i];
    now = end;
  }
  // The quantile is selected on the whole nanoseconds and converted once: to_seconds is monotone,
  // so this is the latency in seconds that selecting on seconds would give.
  int64_t frames = 0;
  for (const int64_t f : frames_of) frames += f;
  const int64_t rank = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(q * static_cast<double>(frames))), 1, frames);
  if (frames == static_cast<int64_t>(latency.size())) {  // one frame each: no cohort
    const auto at = latency.begin() + (rank - 1);
    std::nth_element(latency.begin(), at, latency.end());
    return to_seconds(*at);
  }
  std::vector<std::pair<Time, int64_t>> weighted(latency.size());
  for (size_t i = 0; i < latency.size(); ++i) weighted[i] = {latency[i], frames_of[i]};
  return to_seconds(weighted_select(weighted, rank));
}

}  // namespace metronome
