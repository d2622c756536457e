#include "sim/cost/step_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/corrected_roofline_cost_model.h"
#include "sim/cost/pass_shape.h"
#include "sim/cost/roofline_cost_model.h"
#include "sim/pool/pool_sizing.h"

namespace metronome {
namespace {

// The worst case may be far from any real step, but it must stay far from int64 overflow.
constexpr double kMaxWorstStepSeconds = kMaxStepSeconds * 1000;

using StepShape = FramePasses;

double step_seconds(const CostModel& c, const StepShape& s) { return s.seconds(c); }

// The passes of a step as the engine forms them (sim/cost/pass_shape.h), for `sessions` sessions
// that each ingest `query` tokens over `cached` visible cached tokens; no window clamps the
// attention, which makes it the largest such step.
StepShape step_shape(const Scenario& s, int64_t sessions, int64_t query, int64_t cached) {
  StepShape x;
  x.add(sessions, query, cached, s.workload.output_tokens_per_frame, kv::Window{});
  return x;
}

// Which input made a step this long: the roofline's dominant limit, or the calibration term with
// the largest contribution.
std::string culprit(const Scenario& s, const CostModel& cost, const StepShape& x) {
  if (const auto* r = dynamic_cast<const RooflineCostModel*>(&cost)) {
    const double mem = r->pass_bytes(x.ingest) / s.gpu.memory_bandwidth_bytes_per_s;
    const double flop = r->pass_flops(x.ingest) / s.gpu.bf16_flops;
    if (s.cost_model.step_overhead_s >= std::max(mem, flop)) {
      return fmt::format("cost_model.step_overhead_s = {:g} s", s.cost_model.step_overhead_s);
    }
    if (mem >= flop) {
      return fmt::format(
          "gpu.memory_bandwidth_bytes_per_s = {:g} B/s (the pass reads {:.3g} bytes of weights "
          "and KV)",
          s.gpu.memory_bandwidth_bytes_per_s, r->pass_bytes(x.ingest));
    }
    return fmt::format("gpu.bf16_flops = {:g} FLOP/s (the pass computes {:.3g} FLOPs)",
                       s.gpu.bf16_flops, r->pass_flops(x.ingest));
  }
  if (const auto* c = dynamic_cast<const CalibratedCostModel*>(&cost)) {
    const Calibration& cal = c->calibration();
    size_t worst = 0;
    double worst_s = -1;
    for (size_t i = 0; i < cal.terms.size(); ++i) {
      const auto& t = cal.terms[i];
      if (t.dropped) continue;
      const double part = std::fabs(t.coefficient) * term_feature(t.term, x.ingest, cal.model);
      if (!(part <= worst_s)) {  // NaN and inf count as the largest
        worst_s = part;
        worst = i;
      }
    }
    if (cal.terms.empty() || s.cost_model.step_overhead_s >= worst_s) {
      return fmt::format("cost_model.step_overhead_s = {:g} s", s.cost_model.step_overhead_s);
    }
    const auto& t = cal.terms[worst];
    return fmt::format("cost_model.file {}: fit.terms[{}] ({}) coefficient = {:g} {}", cal.source,
                       worst, term_name(t.term), t.coefficient, term_unit(t.term));
  }
  // The corrected roofline scales the same datasheet fields by fitted fractions: the field that
  // limits the raw roofline's pass limits it too.
  if (dynamic_cast<const CorrectedRooflineCostModel*>(&cost)) {
    const RooflineCostModel raw(s.model, s.gpu, s.cost_model.step_overhead_s);
    return culprit(s, raw, x);
  }
  return "the cost model (" + cost.label() + ")";
}

}  // namespace

Time step_duration(double seconds, const CostModel& cost) {
  if (!(seconds >= 0) || !(seconds <= kMaxStepSeconds)) {
    throw ConfigError(fmt::format(
        "{}: an engine step would take {:g} s; expected a finite step of at most {:g} s (an hour): "
        "the cost model's inputs are out of range",
        cost.label(), seconds, kMaxStepSeconds));
  }
  return std::max<Time>(1, from_seconds(seconds));
}

void check_step_bounds(const Scenario& s, const CostModel& cost) {
  const int64_t n_in = s.workload.input_tokens_per_frame + s.workload.growth().prompt_at(0);
  const StepShape first = step_shape(s, 1, std::max<int64_t>(1, n_in), 0);
  const double t_first = step_seconds(cost, first);
  if (!(t_first <= kMaxStepSeconds)) {
    throw ConfigError(fmt::format(
        "{}: {}: one session's first frame would take {:g} s per engine step; expected at most "
        "{:g} s",
        s.source, culprit(s, cost, first), t_first, kMaxStepSeconds));
  }
  // Every session of a full batch holds a share of the pool; under preempt_recompute one of them
  // may recompute a context as large as the whole pool.
  const PoolSizing pool = size_pool(s);
  const int64_t pool_tokens = pool.num_blocks * s.engine.block_size;
  const int64_t batch = s.engine.max_sessions_per_step;
  const int64_t recompute = s.engine.exhaustion->preempts() ? pool_tokens : 0;
  StepShape worst =
      step_shape(s, batch, std::max<int64_t>(1, n_in), (pool_tokens + batch - 1) / batch);
  const double rc = static_cast<double>(recompute);
  worst.ingest.query_tokens += recompute;
  worst.ingest.qk_pairs += rc * rc;
  worst.decode.kv_read_tokens += recompute;
  worst.decode.qk_pairs += rc;
  // Every feature of any step the engine can form is at most this shape's, so a sum of the
  // calibration's positive terms here bounds every step (a negative term can only lower a step,
  // and is left out rather than trusted to cancel).
  double t_worst = step_seconds(cost, worst);
  if (const auto* c = dynamic_cast<const CalibratedCostModel*>(&cost)) {
    Calibration positive = c->calibration();
    for (auto& t : positive.terms) t.coefficient = std::max(0.0, t.coefficient);
    t_worst = step_seconds(CalibratedCostModel(positive, s.cost_model.step_overhead_s), worst);
  }
  if (!(t_worst <= kMaxWorstStepSeconds)) {
    throw ConfigError(fmt::format(
        "{}: {}: a full batch ({} sessions over a pool of {} tokens) would take {:g} s per engine "
        "step; expected at most {:g} s",
        s.source, culprit(s, cost, worst), batch, pool_tokens, t_worst, kMaxWorstStepSeconds));
  }
}

}  // namespace metronome
