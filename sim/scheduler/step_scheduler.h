// How an engine's steps are made: which queued frames a step serves, what it costs, and what
// becomes of its frames when it ends. The engine (sim/engine/engine.h) owns the clock, admission
// and the sessions' slots (sim/engine/engine_core.h) and knows no scheduler's rules;
// engine.scheduler names one of the registered schedulers (step_schedulers.cpp): "frame",
// Metronome's frame scheduler (frame_scheduler.h), or "vllm_v1", vLLM V1's iterations (vllm_v1.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "sim/engine/engine_core.h"

namespace metronome {

class StepScheduler {
 public:
  virtual ~StepScheduler() = default;
  // A session was admitted into slot `id` (its first frame is due at its next_release): the
  // scheduler queues it.
  virtual void open(int64_t id) = 0;
  // The session in slot `id` hung up: the engine has released its blocks in the core's pool and
  // retired its slot; the scheduler forgets it.
  virtual void close(int64_t id) = 0;
  // The engine is idle at `now` with every event of the instant handled: the end of the step the
  // scheduler starts, or none (it then leaves a wake event for its next release, if any).
  virtual std::optional<Time> start_step(Time now) = 0;
  // The running step ended at `now`: its frames are served.
  virtual void end_step(Time now) = 0;
  // Sessions in the running (or last) step.
  virtual int64_t step_members() const = 0;
  // A scheduler may keep some of the sessions' fields elsewhere between steps. The engine is about
  // to read the sessions (a sample, a control instant): their fields are to be brought up to date.
  virtual void sync() {}
  // The engine is about to change the sessions or admit one (an arrival, a departure, the run's
  // end): sync, and hold nothing elsewhere until the next step.
  virtual void flush() {}
  // Cohorts, where the scheduler has them: identical callers served as one session, an exact
  // optimisation that tests switch off to compare. Set before the run.
  virtual void set_cohorts(bool /*on*/) {}
  // The frame scheduler's usual ring (sim/scheduler/usual_ring.h), another exact optimisation
  // that tests switch off. Set before the run.
  virtual void set_usual_ring(bool /*on*/) {}
};

// A registered scheduler: how the engine sizes its pool and forecasts for it, and how it is made.
struct StepSchedulerKind {
  std::string name;  // engine.scheduler
  // Blocks of the pool the scheduler keeps out of use (vLLM's null block).
  int64_t reserved_blocks = 0;
  // Whether the admission controller's settled forecast (sim/admission/settled_forecast.h), a
  // replay of the frame scheduler's periodic regime, models this scheduler.
  bool periodic_forecast = false;
  std::function<std::unique_ptr<StepScheduler>(EngineCore&)> make;
};

// The registered schedulers, in the order scenario validation lists them.
const std::vector<StepSchedulerKind>& step_schedulers();
// The registered scheduler named `name`; std::logic_error for a name the scenario did not check.
const StepSchedulerKind& step_scheduler(const std::string& name);
std::vector<std::string> step_scheduler_names();

}  // namespace metronome
