// The KV policy: which of a session's tokens stay resident and visible, and how long a call's
// context may grow. Chosen by kv_policy.type through kv_policies(), one file per policy.
//
// The rule is on a session's token positions. A session that has cached ctx tokens holds its first
// sinks() tokens and those from resident_from(ctx) on; its next step's queries see those and the
// step's own tokens, and once the step ends it frees what resident_from of its new context leaves
// behind: tokens leave between steps, never within one. Everything the engines, the first-order
// prediction, pool sizing and the service bounds ask of a session (blocks held and freed at each
// frame, the keys a pass reads) follows from it through KvRule (sim/kv_policy/kv_rule.h). A policy
// whose rule is a kv::Window (core/kv_window.h: what the kernels run) says so through window(),
// and then the closed forms of the window serve the fast paths (the frame scheduler's bulk take
// and usual ring, the forecasts, vLLM's scheduler, the replay); a policy that is no window runs
// without them.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/frame_growth.h"
#include "core/kv_window.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

class KvPolicy {
 public:
  virtual ~KvPolicy() = default;
  virtual std::string type() const = 0;
  // Its fields into the resolved section (`type` is written by the caller).
  virtual void write(nlohmann::json& section) const = 0;
  // For reports: "unbounded", "windowed W=480 S=4".
  virtual std::string describe() const = 0;

  // The first position past the sinks that a session holds, and its next query sees, once it has
  // cached ctx tokens of a workload that grows by g (ctx is g.context_at(m) for the frame m it
  // is about to serve, so a rule counted in frames reads it from g).
  virtual int64_t resident_from(int64_t ctx, const kv::FrameGrowth& g) const = 0;
  // Pinned first tokens, held whatever resident_from says.
  virtual int64_t sinks() const { return 0; }
  // Whether the rule clears the KV at resident_from and the session starts again from position 0
  // there, its blocks filling from the first again (a reset); otherwise positions are kept, and
  // blocks are counted on them (a window, an evicted segment).
  virtual bool restarts_positions() const { return false; }
  // Whether a session's resident KV has a bound whatever its call's length.
  virtual bool bounded() const = 0;
  // Bounded policies: the most tokens a session holds between steps, and the most blocks it
  // holds while a frame is served (its reservation under the memory guard, and the pool's floor).
  virtual int64_t max_resident_tokens(const kv::FrameGrowth&) const { return 0; }
  virtual int64_t max_step_blocks(const kv::FrameGrowth&, kv::BlockSize) const { return 0; }
  // The context at which a call ends, its session full (nullopt: calls last their drawn length).
  virtual std::optional<int64_t> context_cap() const { return std::nullopt; }
  // The rule as a kv::Window, when it is one (see above).
  virtual std::optional<kv::Window> window() const { return std::nullopt; }
  // Checks against the workload and the block size, once the scenario is read: empty, or
  // "field: what was expected" (the caller names the file and the section).
  virtual std::string check(const kv::FrameGrowth&, int64_t /*block_size*/) const { return {}; }
};

// The registry of KV policies (sim/kv_policy/kv_policies.cpp); tests may add to it.
PolicyRegistry<KvPolicy>& kv_policies();

}  // namespace metronome
