#include "sim/fleet/autoscale.h"

#include <algorithm>
#include <cmath>

#include "base/time.h"

namespace metronome {

ScaleDecision decide_scale(const AutoscaleConfig& c, double signal, int64_t ready,
                           int64_t starting) {
  ScaleDecision d;
  const int64_t active = ready + starting;
  if (signal > c.scale_up_above) {
    // The replicas that would hold this load at the threshold; at least one more than ready.
    const double want = std::ceil(static_cast<double>(ready) * signal / c.scale_up_above);
    const auto target = static_cast<int64_t>(std::min(
        static_cast<double>(c.max_replicas), std::max(static_cast<double>(ready + 1), want)));
    d.start = std::max<int64_t>(0, target - active);
  } else if (signal < c.scale_down_below && starting == 0 && ready > c.min_replicas) {
    d.drain = true;
  }
  return d;
}

std::shared_ptr<const AutoscaleConfig> parse_autoscale(JsonSection& a, int64_t initial,
                                                       double horizon_s) {
  auto c = std::make_shared<AutoscaleConfig>();
  c->signal = a.one_of("signal", std::nullopt, {"sessions", "kv_usage", "latency"});
  c->scale_up_above = a.in_range("scale_up_above", std::nullopt, 1e-9, 1e9);
  c->scale_down_below = a.in_range("scale_down_below", std::nullopt, 0, 1e9);
  if (!(c->scale_down_below < c->scale_up_above)) {
    a.fail("scale_down_below", "less than scale_up_above (else the fleet would flap)");
  }
  if (c->signal == "kv_usage" && c->scale_up_above > 1) {
    a.fail("scale_up_above", "a fraction of the pool in (0, 1] for signal kv_usage");
  }
  c->min_replicas = a.integer("min_replicas", 1, 1, 100'000);
  c->max_replicas = a.integer("max_replicas", std::nullopt, 1, 100'000);
  if (c->max_replicas < c->min_replicas) a.fail("max_replicas", "at least min_replicas");
  const std::string count =
      " the group's count (" + std::to_string(initial) + ": the replicas ready at 0 s)";
  if (initial < c->min_replicas) a.fail("min_replicas", "at most" + count);
  if (initial > c->max_replicas) a.fail("max_replicas", "at least" + count);
  c->startup_s = a.in_range("startup_s", std::nullopt, 0, kMaxSeconds);
  c->interval_s = a.in_range("interval_s", c->interval_s, 1e-3, kMaxSeconds);
  if (horizon_s / c->interval_s > 1e7) {
    a.fail("interval_s", "at most 1e7 readings over the horizon (raise interval_s)");
  }
  a.finish();
  return c;
}

nlohmann::json to_json(const AutoscaleConfig& c) {
  return {{"signal", c.signal},
          {"scale_up_above", c.scale_up_above},
          {"scale_down_below", c.scale_down_below},
          {"min_replicas", c.min_replicas},
          {"max_replicas", c.max_replicas},
          {"startup_s", c.startup_s},
          {"interval_s", c.interval_s}};
}

}  // namespace metronome
