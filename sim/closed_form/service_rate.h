// Can the engine serve its frames as fast as they are released, up to the cliff? The first-order
// model assumes every frame is served in its period, so the KV grows at the release rate. An
// overloaded engine serves frames late: the KV grows at the service rate and the pool fills later
// than the first-order t_sat. This check prices one period's frames with the cost model at the
// context where the pool is full, at the full-step pace below, and says so. (Callers that share a
// phase release a period's frames at once, and the last of its steps may end past the period
// while the pace holds: those frames are late by a bounded lag, which the deadline shows, and the
// next period's frames fill the steps.)
#pragma once

#include <cstdint>
#include <optional>

#include "sim/closed_form/first_order.h"
#include "sim/config/scenario.h"
#include "sim/cost/cost_model.h"

namespace metronome {

// The frame scheduler's utilisation with `n` sessions whose frames attend to `cached` keys each:
// the engine time, per frame period, to serve their frames in full steps (min(n, max_num_seqs)
// sessions each). Once an engine falls behind it always finds a full step waiting, so full steps
// are its fastest pace: above 1 it falls further behind every period, and latency grows without
// bound however low it reads in a short run (a 24 s capacity probe read p95 482 ms at 1041 Omni
// callers; 200 s of the same callers put 87% of frames past the deadline). Below 1 it keeps up.
// The capacity probe and AIMD's settled forecast both judge with it.
double full_step_utilisation(const Scenario& s, int64_t n, int64_t cached, const CostModel& cost);
// The most sessions at `cached` keys each that keep full-step pace (utilisation at most 1); 0 if
// one session does not.
int64_t full_step_sessions(const Scenario& s, int64_t cached, const CostModel& cost);

// Fills nothing in `p`; callers keep the result in p.service so every output reports it.
ServiceCheck check_service(const Scenario& s, const FirstOrderPrediction& p, const CostModel& cost);

}  // namespace metronome
