#include "sim/config/unused_sets.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "base/config_error.h"
#include "base/json_file.h"
#include "sim/admission/admission_policy.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/cost_models.h"
#include "sim/fleet/fleet_config.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/router.h"
#include "sim/kv_policy/kv_policy.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome {

std::string set_key(const std::string& assignment) {
  return assignment.substr(0, std::min(assignment.find('='), assignment.size()));
}

namespace {

// The --set assignments of a key that the policy section at `path` keeps for another type
// (PolicyRegistry::ignored_keys): `--set kv_policy.window_tokens=256` on an unbounded scenario does
// nothing, and must not look applied. Keys a file keeps for another type, ready for a `--set
// kv_policy.type=...` flip, are the file's business.
template <class Policy>
void warn_ignored_sets(std::vector<std::string>& out, const nlohmann::json& j,
                       const std::vector<std::string>& path, const PolicyRegistry<Policy>& registry,
                       const std::string& type, const std::vector<std::string>& sets) {
  const nlohmann::json* section = &j;
  std::string dotted;
  for (const auto& key : path) {
    if (!section->is_object() || !section->contains(key)) return;
    section = &(*section)[key];
    dotted += (dotted.empty() ? "" : ".") + key;
  }
  for (const auto& [key, reader] : registry.ignored_keys(*section, type)) {
    for (const auto& a : sets) {
      const std::string k = set_key(a);
      if (k != dotted && k != dotted + "." + key) continue;
      out.push_back(fmt::format(
          "--set {0}: {1}.{2} is ignored: it belongs to {1}.type \"{3}\", and the type is \"{4}\"",
          argument_preview(a), dotted, key, reader, type));
    }
  }
}

// The --set assignments a fleet group's own section hides from its replicas: the group's model,
// gpu or kv_policy replaces the scenario's, and its engine fields patch the scenario's engine
// (fleet_config.cpp).
void warn_shadowed_sets(std::vector<std::string>& out, const nlohmann::json& j,
                        const std::vector<std::string>& sets) {
  const auto fleet = j.find("fleet");
  if (fleet == j.end() || !fleet->is_object() || !fleet->contains("groups")) return;
  const nlohmann::json& groups = (*fleet)["groups"];
  if (!groups.is_array()) return;
  for (const auto& a : sets) {
    const std::string k = set_key(a);
    const size_t dot = k.find('.');
    const std::string top = k.substr(0, dot);
    if (std::ranges::find(kGroupOverrides, top) == std::end(kGroupOverrides)) continue;
    std::string field = dot == std::string::npos ? "" : k.substr(dot + 1);
    field = field.substr(0, field.find('.'));
    for (size_t i = 0; i < groups.size(); ++i) {
      const nlohmann::json& g = groups[i];
      if (!g.is_object() || !g.contains(top) || !g[top].is_object()) continue;
      if (top == "engine" && !field.empty()) {
        // The group's engine hides the field under either of its names.
        std::string alias;
        for (const auto& [x, y] : kEngineAliases) {
          if (field == x) alias = y;
          if (field == y) alias = x;
        }
        if (!g[top].contains(field) && (alias.empty() || !g[top].contains(alias))) continue;
      }
      const std::string name = g.contains("name") && g["name"].is_string()
                                   ? g["name"].get<std::string>()
                                   : "group" + std::to_string(i);
      out.push_back(fmt::format(
          "--set {}: fleet.groups[{}] ({}) sets its own {}, which its replicas run instead",
          argument_preview(a), i, name,
          top == "engine" && !field.empty() ? "engine." + field : top));
    }
  }
}

// Model fields that shape a step's work. A calibration of the scenario's model name is read as
// measured on this very model, so it is not scaled: a --set of one of these moves the roofline's
// step times but not a calibrated run's, and must say so.
constexpr std::string_view kShapeFields[] = {"model.hidden_size",
                                             "model.attention_heads",
                                             "model.kv_heads",
                                             "model.head_dim",
                                             "model.ffn_size",
                                             "model.vocab_size",
                                             "model.experts",
                                             "model.experts_active",
                                             "model.expert_ffn_size",
                                             "model.kv_bytes_per_element",
                                             "model.weight_bytes_per_param"};

// Whether the --sets moved a field from what the description said, both read as parse_scenario
// reads them (a field a file leaves out has its default): a --set of the value already there
// changes nothing, and is worth no warning.
class Moves {
 public:
  Moves(const Scenario& s, const nlohmann::json& described) : s_(s), described_(described) {}
  bool operator()(const std::string& key) {
    if (!before_) {
      after_ = to_json(s_);
      try {
        before_ = to_json(parse_scenario(described_, s_.source));
      } catch (const std::exception&) {
        before_ = nlohmann::json();  // a file only its --sets make whole: every set moves
      }
    }
    std::string pointer = "/" + key;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const nlohmann::json::json_pointer at(pointer);
    const auto value = [&](const nlohmann::json& j) {
      return j.contains(at) ? j.at(at) : nlohmann::json();
    };
    return value(*before_) != value(after_);
  }

 private:
  const Scenario& s_;
  const nlohmann::json& described_;
  std::optional<nlohmann::json> before_;
  nlohmann::json after_;
};

void warn_unscaled_shape_sets(std::vector<std::string>& out, const Scenario& s, Moves& moves,
                              const std::vector<std::string>& sets) {
  if (s.cost_model.type != "calibrated") return;
  std::vector<std::string> shaped;
  for (const auto& a : sets) {
    const std::string k = set_key(a);
    if (std::ranges::find(kShapeFields, k) != std::end(kShapeFields) && moves(k)) {
      shaped.push_back(a);
    }
  }
  if (shaped.empty()) return;
  Calibration c;
  try {
    c = read_calibration(s.cost_model.file);
  } catch (const std::exception&) {
    return;  // the cost model itself reports an unreadable file
  }
  if (!measured_on(c, s.model)) return;  // scaled op by op to this model's shape
  for (const auto& a : shaped) {
    out.push_back(fmt::format(
        "--set {}: the step times do not follow {}: the cost model is calibrated on {}, which "
        "measured model \"{}\" and is taken as is for a model of that name; {}",
        argument_preview(a), set_key(a), c.source, c.model_name,
        c.has_scaling ? "--set model.name=<another name> to have its scaling section scale the "
                        "measured ops to this shape, or cost_model.type=corrected_roofline"
                      : "calibrate this shape, or --set cost_model.type=corrected_roofline"));
  }
}

}  // namespace

std::vector<std::string> unused_set_warnings(const Scenario& s, const nlohmann::json& described,
                                             const nlohmann::json& j,
                                             const std::vector<std::string>& sets) {
  std::vector<std::string> out;
  warn_ignored_sets(out, j, {"kv_policy"}, kv_policies(), s.kv_policy.type(), sets);
  warn_ignored_sets(out, j, {"workload", "arrival"}, arrival_policies(), s.workload.arrival.type(),
                    sets);
  warn_ignored_sets(out, j, {"workload", "duration"}, duration_policies(),
                    s.workload.duration.type(), sets);
  warn_ignored_sets(out, j, {"admission"}, admission_policies(), s.admission.type(), sets);
  if (s.fleet) {
    warn_ignored_sets(out, j, {"fleet", "router"}, router_policies(), s.fleet->router->type(),
                      sets);
    warn_ignored_sets(out, j, {"fleet", "gateway"}, gateway_policies(), s.fleet->gateway->type(),
                      sets);
    warn_shadowed_sets(out, j, sets);
  }
  Moves moves(s, described);
  warn_unscaled_shape_sets(out, s, moves, sets);
  const bool states_weight_bytes = j.contains("model") && j["model"].is_object() &&
                                   j["model"].contains("weight_bytes") &&
                                   !j["model"]["weight_bytes"].is_null();
  const bool sets_weight_bytes = std::ranges::any_of(
      sets, [](const std::string& a) { return set_key(a) == "model.weight_bytes"; });
  for (const auto& a : sets) {
    // A GPU field some cost model prices steps from, which this scenario's does not.
    const std::string k = set_key(a);
    const std::string& cost = s.cost_model.type;
    if (k.starts_with("gpu.")) {
      const std::string field = k.substr(4, k.find('.', 4) - 4);
      if (some_cost_model_reads(field) && !cost_model_reads(cost, field)) {
        out.push_back(
            "--set " + argument_preview(a) + ": " + k + " is ignored: the cost model is \"" + cost +
            "\", which does not price steps from it" +
            (cost == "calibrated" ? " (it reads measured step times from its file)" : ""));
      }
    }
    if ((k == "engine.gpu_memory_utilization" || k == "engine.activation_reserve_bytes") &&
        s.engine.num_blocks) {
      out.push_back(fmt::format(
          "--set {}: {} is ignored: engine.num_gpu_blocks fixes the pool at {} blocks (--set "
          "engine.num_gpu_blocks=null to size it from the GPU's memory)",
          argument_preview(a), k, *s.engine.num_blocks));
    }
    if ((k == "model.tie_word_embeddings" || k == "model.attention_bias") && states_weight_bytes) {
      out.push_back(fmt::format(
          "--set {}: {} is ignored: it counts weights only where they are derived from the "
          "shapes, and model {} states weight_bytes (--set model.weight_bytes=null to derive "
          "them)",
          argument_preview(a), k, s.model.name));
    }
    // A narrower weight moves a roofline's step time, but a stated weight_bytes still sizes the
    // pool.
    if (k == "model.weight_bytes_per_param" && states_weight_bytes && !sets_weight_bytes &&
        moves(k)) {
      out.push_back(fmt::format(
          "--set {}: the KV pool does not follow {}: model {} states weight_bytes ({:.4g} B), "
          "which "
          "the pool is sized from (--set model.weight_bytes=null to derive the weights from the "
          "shapes at this width, or set model.weight_bytes too)",
          argument_preview(a), k, s.model.name, s.model.weight_bytes));
    }
    if (k == "cost_model.file" && s.cost_model.type != "calibrated") {
      out.push_back("--set " + argument_preview(a) +
                    ": cost_model.file is ignored: the cost model is \"" + s.cost_model.type +
                    "\" (set cost_model.type=calibrated to run on the file)");
    }
    if (k == "engine.exhaustion" && s.engine.scheduler == "vllm_v1") {
      out.push_back("--set " + argument_preview(a) +
                    ": engine.exhaustion is ignored by engine.scheduler \"vllm_v1\", which "
                    "preempts the last running request and recomputes it later, as vLLM "
                    "does (the frame scheduler runs the exhaustion policies)");
    }
  }
  return out;
}

}  // namespace metronome
