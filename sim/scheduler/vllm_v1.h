// engine.scheduler "vllm_v1": each step is one of vLLM V1's iterations (sim/vllm/vllm_scheduler.h),
// whose scheduler owns the blocks of the engine's pool. Frames released by a step's start join
// vLLM's queues first, in release order, as requests reach vLLM before its next schedule().
#pragma once

#include "sim/scheduler/step_scheduler.h"
#include "sim/vllm/vllm_scheduler.h"

namespace metronome {

class VllmV1Scheduler final : public StepScheduler {
 public:
  explicit VllmV1Scheduler(EngineCore& core);

  void open(int64_t id) override;
  void close(int64_t id) override { vllm_.finish(id); }
  std::optional<Time> start_step(Time now) override;
  void end_step(Time now) override;
  int64_t step_members() const override { return static_cast<int64_t>(plan_.scheduled.size()); }

 private:
  EngineCore& core_;
  VllmScheduler vllm_;
  VllmScheduler::StepPlan plan_;  // the running step
};

}  // namespace metronome
