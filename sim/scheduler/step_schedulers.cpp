#include <stdexcept>

#include "sim/scheduler/frame_scheduler.h"
#include "sim/scheduler/step_scheduler.h"
#include "sim/scheduler/vllm_v1.h"

namespace metronome {

const std::vector<StepSchedulerKind>& step_schedulers() {
  static const std::vector<StepSchedulerKind> kinds = {
      {"frame", 0, true,
       [](EngineCore& core) -> std::unique_ptr<StepScheduler> {
         return std::make_unique<FrameScheduler>(core);
       }},
      {"vllm_v1", 1, false,
       [](EngineCore& core) -> std::unique_ptr<StepScheduler> {
         return std::make_unique<VllmV1Scheduler>(core);
       }},
  };
  return kinds;
}

const StepSchedulerKind& step_scheduler(const std::string& name) {
  for (const StepSchedulerKind& k : step_schedulers()) {
    if (k.name == name) return k;
  }
  throw std::logic_error("no step scheduler \"" + name + "\" is registered");
}

std::vector<std::string> step_scheduler_names() {
  std::vector<std::string> names;
  for (const StepSchedulerKind& k : step_schedulers()) names.push_back(k.name);
  return names;
}

}  // namespace metronome
