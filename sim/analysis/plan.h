// The cheapest fleet for a traffic: for each candidate GPU x tensor-parallel degree x window W x
// sinks S, the fewest replicas (a static fleet, least_sessions routing, no gateway) that serve the
// scenario's traffic to its horizon with no replica stalled, no call turned away and the true p99
// within the frame deadline; the cheapest of those by the GPUs' price per hour. Each fleet is a
// `simulate` of the scenario's fleet (sim/fleet/fleet.h): nothing is extrapolated.
//
// The replica count is found by doubling from 1, then bisection, within [1, max_replicas], which
// assumes that a fleet that serves the traffic still serves it with one more replica
// (least_sessions spreads the same calls thinner); the count below the answer is run too, and
// reported, so the margin is visible. A window or sinks that fails the quality floor (a perplexity
// ratio to full attention above max_ppl_ratio, or none measured) is not tried.
//
// The KV policies tried (PlanSpec::kv_policies): "windowed", over every W x S, and "unbounded"
// (every caller keeps its whole context: one candidate per GPU x degree, W and S 0, full
// attention's quality), so the same search sizes a fleet with and without a window.
//
// With an autoscale section (PlanSpec::autoscale) each candidate is also tried autoscaled: one
// group that starts at min_replicas and scales by the section's rule (sim/fleet/autoscale.h),
// the searched count being its max_replicas, priced by the GPU-hours it ran (started to gone),
// not by its peak for the whole horizon.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/shard.h"
#include "sim/config/scenario.h"

namespace metronome {

struct PlanSpec {
  std::vector<std::string> gpus{"h100", "h200"};  // names or paths, as --set gpu= takes them
  std::vector<int64_t> tensor_parallel{1, 2, 4, 8};
  std::vector<int64_t> windows{240, 480, 960, 1920};
  std::vector<int64_t> sinks{16};
  std::vector<std::string> kv_policies{"windowed"};  // "windowed" (x windows x sinks), "unbounded"
  int64_t max_replicas = 64;
  // (W, S) -> perplexity ratio to full attention (read_ppl_ratios, sim/analysis/recommend.h).
  std::vector<std::pair<std::pair<int64_t, int64_t>, double>> ppl_ratio;
  std::optional<double> max_ppl_ratio;
  std::string quality_source;
  // Null: static fleets only. Else a fleet.autoscale section without max_replicas (the plan sets
  // it to the count it searches): each candidate is tried with it too.
  nlohmann::json autoscale;
  int jobs = 1;
  bool progress = false;
  Shard shard;  // plan_shard: the candidates it searches (by index in the order given)
};

struct PlanFleet {
  int64_t replicas = 0;
  bool meets = false;
  std::string why_not;     // the first test it fails, when it does not meet them
  double true_p99_ms = 0;  // inf where frames were never served
  double silent_fraction = 0;
  int64_t calls_offered = 0, calls_rejected = 0, replicas_stalled = 0;
  double call_hours = 0;  // frames due x frame period
  double hours = 0;       // the horizon
  double gpu_hours = 0;   // what the fleet ran: each replica from its start to its end x GPUs
};

struct PlanCandidate {
  std::string gpu;
  std::string kv_policy = "windowed";  // or "unbounded" (window and sinks 0)
  int64_t tensor_parallel = 1, window = 0, sinks = 0;
  bool autoscaled = false;  // best->replicas is then the most it may scale to
  double price_per_gpu_hour = 0;
  std::optional<double> ppl_ratio;
  std::string skipped;  // why it was not tried (the scenario refuses it, the quality floor)
  std::optional<PlanFleet> best;      // the fewest replicas that meet the tests
  std::optional<PlanFleet> short_of;  // one replica fewer (or the largest tried, when none meets)
  int64_t runs = 0;
  // best: replicas x GPUs x price (static); its GPU-hours over the horizon x price (autoscaled)
  double cost_per_hour() const;
  double cost_per_call_hour() const;  // best: its cost over the horizon / call-hours served
};

struct Plan {
  std::vector<PlanCandidate> candidates;  // ranked: those that meet, cheapest first; then the rest
  std::optional<size_t> best;
};

// ConfigError naming the GPU file and price_per_gpu_hour where a candidate GPU states no price.
Plan plan(const Scenario& base, const PlanSpec& spec);
// Over machines: plan_shard searches only spec.shard's candidates (i % count == index, i in the
// order GPU x TP x KV x W x S) and returns them, every number exact, with the scenario and the
// search it ran. merge_plan takes every shard's (file name, document) of one plan and returns
// what plan() returns for the same scenario and spec, so plan_json and plan_text print it byte
// for byte. ConfigError naming the file where a shard is of another scenario or search, given
// twice, of another shard count, or not a shard; or naming the shard that is missing.
nlohmann::json plan_shard(const Scenario& base, const PlanSpec& spec);
Plan merge_plan(const Scenario& base, const PlanSpec& spec,
                const std::vector<std::pair<std::string, nlohmann::json>>& shards);
nlohmann::json plan_json(const Scenario& base, const PlanSpec& spec, const Plan& p);
std::string plan_text(const Scenario& base, const PlanSpec& spec, const Plan& p);

}  // namespace metronome
