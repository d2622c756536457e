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
  std::vector<std::pair<double, int64_t>> latencies;  // (seconds, frames), recorded periods only
  latencies.reserve(n * (kPeriods - kRecordFrom));
  std::vector<Time> step_releases;  // of the step's recorded members, in latencies' order
  size_t next = 0;                  // first release not yet served
  int64_t taken_of_next = 0;        // members of release `next` already served (a split cohort)
  Time now = 0;
  while (next < total) {
    now = std::max(now, releases[next].at);
    // The step's members priced by their sums, as the frame scheduler's bulk take prices a run
    // (FramePasses::add_run: the sums are whole numbers, so it equals a member-by-member add).
    int64_t members = 0, sum_cached = 0, sum_twice_keys = 0;
    step_releases.clear();
    while (next < total && releases[next].at <= now && members < shape.max_batch) {
      const Release& r = releases[next];
      const int64_t take = std::min(r.count - taken_of_next, shape.max_batch - members);
      members += take;
      sum_cached += take * r.cached;
      sum_twice_keys += take * twice_keys_per_query(shape.n_in, r.cached, twice_cap);
      if (next >= kRecordFrom * n) {  // answered at the step's end, below
        step_releases.push_back(r.at);
        latencies.emplace_back(0.0, take);
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
    const size_t from = latencies.size() - step_releases.size();
    for (size_t i = 0; i < step_releases.size(); ++i) {
      latencies[from + i].first = to_seconds(end - step_releases[i]);
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
    // By latency alone: which of two equal latencies comes first cannot change the answer.
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

}  // namespace metronome
