// Can the engine serve its frames as fast as they are released, up to the cliff? The first-order
// model assumes every frame is served in its period, so the KV grows at the release rate. An
// overloaded engine serves frames late: the KV grows at the service rate and the pool fills later
// than the first-order t_sat. This check prices one period's frames with the cost model at the
// context where the pool is full and says so.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/cost/cost_model.h"
#include "sim/first_order.h"
#include "sim/scenario.h"

namespace metronome {

// Fills nothing in `p`; callers keep the result in p.service so every output reports it.
ServiceCheck check_service(const Scenario& s, const FirstOrderPrediction& p, const CostModel& cost);

}  // namespace metronome
