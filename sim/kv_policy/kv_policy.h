// The KV policy: which of a session's tokens stay resident and visible (kernels and simulator share
// the rule through kv::Window, core/kv_window.h). Chosen by kv_policy.type through kv_policies(),
// one file per policy.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/kv_window.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

class KvPolicy {
 public:
  virtual ~KvPolicy() = default;
  virtual std::string type() const = 0;
  // The visibility rule's parameters: what the engines keep and attend to.
  virtual kv::Window window() const = 0;
  // Its fields into the resolved section (`type` is written by the caller).
  virtual void write(nlohmann::json& section) const = 0;
  // For reports: "unbounded", "windowed W=480 S=4".
  virtual std::string describe() const = 0;
};

// The registry of KV policies (sim/kv_policy/kv_policies.cpp); tests may add to it.
PolicyRegistry<KvPolicy>& kv_policies();

}  // namespace metronome
