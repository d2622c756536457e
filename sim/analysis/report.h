// Turns a run (or a prediction) into the JSON a script reads and the short text a person reads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/closed_form/first_order.h"
#include "sim/config/scenario.h"
#include "sim/output/run_result.h"

namespace metronome {

nlohmann::json prediction_json(const Scenario& s, const FirstOrderPrediction& p);
// A run's result, the one serializer of RunResult (simulate's "result", each side of a replay).
nlohmann::json run_result_json(const RunResult& r);
nlohmann::json run_json(const Scenario& s, const FirstOrderPrediction& p, const RunResult& r,
                        const std::string& cost_label);

std::string prediction_text(const Scenario& s, const FirstOrderPrediction& p);
// TTFT and time per output token of one frame once its step starts (p.service), one line; empty
// without a service check.
std::string frame_passes_text(const Scenario& s, const FirstOrderPrediction& p);
std::string run_text(const Scenario& s, const FirstOrderPrediction& p, const RunResult& r,
                     const std::string& cost_label);

}  // namespace metronome
