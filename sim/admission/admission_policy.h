// An admission policy: the parsed admission section of one admission.type, which makes the
// engine's AdmissionController. Chosen by admission.type through admission_policies(), one file per
// policy; admission.memory_guard composes with any of them and is the scenario's (AdmissionConfig).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/admission/admission_controller.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

// The control loop of a policy that learns its cap online: what the engine measures for it.
struct ControlLoop {
  double interval_s = 1.0;          // control interval
  std::string signal = "reported";  // reported | true latency
  double quantile = 0.95;           // of the interval's per-frame latency
  int64_t initial_cap = 16;
  int64_t floor = 1;
  int64_t max_cap = 100000;

  // Reads and checks the loop's fields of an admission section (floor <= initial_cap <= max_cap).
  static ControlLoop parse(JsonSection& a);
  void write(nlohmann::json& section) const;
  static constexpr const char* kFields[] = {"interval_s",  "signal", "quantile",
                                            "initial_cap", "floor",  "max_cap"};
};

class AdmissionPolicy {
 public:
  virtual ~AdmissionPolicy() = default;
  virtual std::string type() const = 0;
  // Its fields into the resolved section (`type` and `memory_guard` are written by the caller).
  virtual void write(nlohmann::json& section) const = 0;
  virtual std::unique_ptr<AdmissionController> make_controller(double deadline_s) const = 0;
  // False for a policy that admits every caller: the memory guard's "auto" stays off under it.
  virtual bool limits() const { return true; }
  // The loop the engine runs for an adaptive controller; nullptr for a fixed one.
  virtual const ControlLoop* control_loop() const { return nullptr; }
  // Sessions one increase would add: the settled-latency forecast in ControlSignal looks that far.
  virtual double forecast_increase() const { return 2; }
  // The fraction of the deadline this policy treats as congestion; capacity's and recommend's
  // default deadline-cap fraction.
  virtual double congestion_fraction() const { return 0.9; }
};

// The registry (sim/admission/admission_policies.cpp); tests may add to it.
PolicyRegistry<AdmissionPolicy>& admission_policies();

}  // namespace metronome
