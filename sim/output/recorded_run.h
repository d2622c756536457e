// A run recorded on a real engine (scripts/vllm_live.py's frames, engine steps, Prometheus samples
// and admission log), booked by the simulator's own FrameLedger: the RunResult and time series
// `simulate` writes, by the same definitions of due, served, silent and late. The callers are the
// scenario's own (its arrival process and call lengths, drawn from the same seeded streams as the
// engine's), so a recording of another scenario is refused rather than booked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/output/run_observer.h"
#include "sim/output/run_result.h"

namespace metronome {

struct RecordedRun {
  struct Frame {  // one released frame; done_s empty when its output never completed
    int64_t session = 0, frame = 0;
    double release_s = 0;
    std::optional<double> done_s;
    int64_t tokens = 0;
    std::string where;  // file:line, for messages
  };
  struct Step {  // one scheduler pass on the run's clock
    double start_s = 0, end_s = 0;
    bool scheduled = true;  // it scheduled tokens (else only a refusal or a preemption counts)
    bool refused = false;   // an allocation failed in it
    int64_t preempted = 0;  // requests preempted in it
  };
  struct Gauge {  // the engine's own metrics read at t_s
    double t_s = 0, kv_usage = 0;
    int64_t waiting = 0;
  };
  struct Control {  // the admission controller at the end of a control interval
    double t_s = 0, signal_s = 0;
    int64_t cap = 0;
  };
  std::string source;  // the records' folder, for messages
  std::vector<Frame> frames;
  std::vector<Step> steps;
  std::vector<Gauge> gauges;
  std::vector<Control> controls;
};

// ConfigError (naming the file and line) when the recording does not fit the scenario: a session
// the scenario never admits, a release off its caller's schedule, a frame missing or past its
// call. Frames released after the scenario's horizon are left out (a shorter horizon books the
// start of a recording).
// `pool_blocks` is the engine's pool, against which the gauges' KV usage is turned into blocks.
RunResult book_recorded_run(const Scenario& s, int64_t pool_blocks, const RecordedRun& r,
                            RunObserver* observer);

}  // namespace metronome
