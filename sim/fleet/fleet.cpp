#include "sim/fleet/fleet.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace metronome {

Scenario Fleet::replica_scenario(const Scenario& group_replica, uint64_t seed, size_t i) {
  Scenario r = group_replica;
  // Only frame jitter draws inside a replica that takes placed calls; replicas sharing one stream
  // would jitter in lockstep.
  if (i > 0) r.seed = Rng(seed, "replica " + std::to_string(i)).next() >> 1;
  return r;
}

Fleet::Fleet(const Scenario& s, std::vector<RunObserver*> observers)
    : scenario_(s),
      config_(s.fleet ? *s.fleet : throw std::logic_error("Fleet: a scenario without a fleet")),
      horizon_(from_seconds(s.horizon_s)),
      router_(config_.router->make_router(s.seed)),
      gateway_(config_.gateway->make_gateway()),
      arrival_rng_(s.seed, "arrivals"),
      duration_rng_(s.seed, "durations"),
      arrivals_(make_arrival_process(s.workload.arrival)),
      durations_(make_duration_distribution(s.workload.duration)) {
  const auto n = static_cast<size_t>(config_.replicas());
  if (!observers.empty() && observers.size() != n) {
    throw std::logic_error("Fleet: observers must be one per replica");
  }
  for (const ReplicaGroup& g : config_.groups) {
    costs_.push_back(make_cost_model(*g.replica));
    const PoolSizing pool = size_pool(*g.replica);
    for (int64_t k = 0; k < g.count; ++k) {
      const size_t i = engines_.size();
      scenarios_.push_back(
          std::make_unique<const Scenario>(replica_scenario(*g.replica, s.seed, i)));
      engines_.push_back(std::make_unique<Engine>(*scenarios_.back(), *costs_.back(), pool,
                                                  observers.empty() ? nullptr : observers[i]));
      engines_.back()->place_arrivals();
      control_loop_.push_back(g.replica->admission.policy->control_loop() != nullptr);
      ReplicaOutcome o;
      o.group = g.name;
      o.index_in_group = k;
      result_.replicas.push_back(std::move(o));
    }
  }
  views_.resize(n);
  result_.horizon_s = s.horizon_s;
}

ReplicaView Fleet::view(size_t i) const {
  const Engine& e = *engines_[i];
  const EngineGauges g = e.gauges();
  ReplicaView v;
  v.live = g.live;
  v.pool_blocks = e.pool_blocks();
  v.free_blocks = v.pool_blocks - g.pool_used;
  v.queue_depth = g.stalled;
  v.latency_s =
      control_loop_[i] && std::isfinite(g.signal_s) ? g.signal_s : to_seconds(e.last_step());
  return v;
}

void Fleet::advance_all(Time until, bool arrival_at_until) {
  for (auto& e : engines_) e->advance(until, arrival_at_until);
}

void Fleet::offer(Time now, double duration_s) {
  ++result_.offered;
  int64_t live = 0;
  for (size_t i = 0; i < engines_.size(); ++i) {
    views_[i] = view(i);
    live += views_[i].live;
  }
  const size_t r = router_->choose(views_);
  if (r >= engines_.size()) throw std::logic_error("Fleet: a router chose no replica");
  ReplicaOutcome& o = result_.replicas[r];
  ++o.routed;
  if (const char* why = gateway_->refuse(now, views_[r], live)) {
    ++o.gateway_rejected;
    ++result_.rejected[why];
    return;
  }
  switch (engines_[r]->place(now, duration_s)) {
    case Engine::Placement::kAdmitted:
      ++result_.placed;
      break;
    case Engine::Placement::kCapped:
      ++result_.rejected["replica_cap"];
      break;
    case Engine::Placement::kNoMemory:
      ++result_.rejected["memory_guard"];
      break;
  }
}

FleetResult Fleet::run(int threads, Progress* progress) {
  for (auto& e : engines_) e->begin();
  const size_t n = engines_.size();
  // Progress counts replica-seconds simulated (the total is the horizon's whole seconds x the
  // replicas). After the last call each replica is brought up to each second's instant as if a
  // call might come there, which changes nothing it does (Engine::advance).
  const Time tick = from_seconds(1.0);
  Time shown = 0;
  std::optional<Time> next = arrivals_->next(arrival_rng_);
  while (next && *next <= horizon_) {
    const Time t = *next;
    // The call's length first, then the next arrival: separate streams, so the order is free.
    const double duration_s = durations_->sample(duration_rng_);
    next = arrivals_->next(arrival_rng_);
    advance_all(t, true);
    offer(t, duration_s);
    if (t / tick * tick > shown) {
      if (progress) progress->add(static_cast<int64_t>(n) * ((t / tick * tick - shown) / tick));
      shown = t / tick * tick;
    }
  }
  // No call is left to place: the replicas run on alone to the horizon.
  const size_t workers = std::clamp<size_t>(static_cast<size_t>(std::max(threads, 1)), 1, n);
  auto finish = [&](size_t w) {
    for (Time at = shown + tick; at <= horizon_; at += tick) {
      int64_t mine = 0;
      for (size_t i = w; i < n; i += workers, ++mine) engines_[i]->advance(at, true);
      if (progress) progress->add(mine);
    }
    for (size_t i = w; i < n; i += workers) result_.replicas[i].run = engines_[i]->end();
  };
  if (workers == 1) {
    finish(0);
  } else {
    std::vector<std::jthread> pool;
    for (size_t w = 0; w < workers; ++w) pool.emplace_back(finish, w);
  }
  if (progress) progress->finish();
  return result_;
}

}  // namespace metronome
