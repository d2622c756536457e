#include "sim/settled_forecast.h"

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
  constexpr int kPeriods = 4, kRecordFrom = 2;
  const size_t n = callers.size();
  const size_t total = n * kPeriods;
  // Release k of the sorted callers: period k / n, caller k % n.
  auto release = [&](size_t k) {
    return static_cast<Time>(k / n) * shape.period + callers[k % n].phase;
  };
  std::vector<std::pair<double, int64_t>> latencies;  // (seconds, frames), recorded periods only
  latencies.reserve(n * (kPeriods - kRecordFrom));
  size_t next = 0;            // first release not yet served
  int64_t taken_of_next = 0;  // members of release `next` already served (a split cohort)
  Time now = 0;
  while (next < total) {
    now = std::max(now, release(next));
    FramePasses passes;
    int64_t members = 0;
    const size_t first = next;
    const int64_t first_taken = taken_of_next;
    while (next < total && release(next) <= now && members < shape.max_batch) {
      const ForecastCaller& c = callers[next % n];
      const int64_t take = std::min(c.count - taken_of_next, shape.max_batch - members);
      passes.add(take, shape.n_in, c.cached, shape.n_out, shape.window);
      members += take;
      taken_of_next += take;
      if (taken_of_next == c.count) {
        ++next;
        taken_of_next = 0;
      }
    }
    const Time end = now + step_duration(passes.seconds(cost), cost);
    // Every frame of this step is answered at its end.
    int64_t before = first_taken;
    for (size_t k = first; k <= next && k < total; ++k) {
      const int64_t upto = k == next ? taken_of_next : callers[k % n].count;
      const int64_t frames = upto - before;
      before = 0;
      if (frames > 0 && k / n >= static_cast<size_t>(kRecordFrom)) {
        latencies.emplace_back(to_seconds(end - release(k)), frames);
      }
    }
    now = end;
  }
  std::sort(latencies.begin(), latencies.end());
  int64_t frames = 0;
  for (const auto& l : latencies) frames += l.second;
  const auto rank = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(q * static_cast<double>(frames))), 1, frames);
  int64_t seen = 0;
  for (const auto& [seconds, k] : latencies) {
    seen += k;
    if (seen >= rank) return seconds;
  }
  return latencies.back().first;
}

}  // namespace metronome
