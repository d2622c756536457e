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
    : Fleet(s, [observers](size_t i) { return i < observers.size() ? observers[i] : nullptr; }) {
  if (!observers.empty() && observers.size() != static_cast<size_t>(config_.replicas())) {
    throw std::logic_error("Fleet: observers must be one per replica");
  }
}

Fleet::Fleet(const Scenario& s, ObserverFor observer_for)
    : scenario_(s),
      config_(s.fleet ? *s.fleet : throw std::logic_error("Fleet: a scenario without a fleet")),
      horizon_(from_seconds(s.horizon_s)),
      router_(config_.router->make_router(s.seed)),
      gateway_(config_.gateway->make_gateway(s.workload.deadline())),
      arrival_rng_(s.seed, "arrivals"),
      duration_rng_(s.seed, "durations"),
      arrivals_(make_arrival_process(s.workload.arrival)),
      durations_(make_duration_distribution(s.workload.duration)),
      observer_for_(std::move(observer_for)) {
  for (size_t g = 0; g < config_.groups.size(); ++g) {
    costs_.push_back(make_cost_model(*config_.groups[g].replica));
    pools_.push_back(size_pool(*config_.groups[g].replica));
    for (int64_t k = 0; k < config_.groups[g].count; ++k) add_replica(g, k, 0, 0);
  }
  result_.horizon_s = s.horizon_s;
  if (const ControlLoop* loop = config_.gateway->control_loop()) {
    // The engines' own control period (Engine::begin): the readings fall on their instants.
    gateway_period_ = std::max<Time>(1, from_seconds(loop->interval_s));
    result_.gateway_initial_cap = gateway_->control_cap();
  }
}

void Fleet::add_replica(size_t g, int64_t k, Time at, Time ready_at) {
  const ReplicaGroup& group = config_.groups[g];
  const size_t i = engines_.size();
  scenarios_.push_back(
      std::make_unique<const Scenario>(replica_scenario(*group.replica, scenario_.seed, i)));
  engines_.push_back(std::make_unique<Engine>(*scenarios_.back(), *costs_[g], pools_[g],
                                              observer_for_ ? observer_for_(i) : nullptr));
  Engine& e = *engines_.back();
  e.place_arrivals();
  if (begun_) {
    // Idle from 0 s to its start: its clock and time series run from the run's start, as every
    // replica's do.
    e.begin();
    e.advance(at, true);
  }
  control_loop_.push_back(group.replica->admission.policy->control_loop() != nullptr);
  ready_at_.push_back(ready_at);
  (ready_at <= at ? ready_ : starting_).push_back(i);
  views_.resize(ready_.size());
  ReplicaOutcome o;
  o.group = group.name;
  o.index_in_group = k;
  o.gpus = group.replica->engine.tensor_parallel;
  o.started_s = to_seconds(at);
  o.ready_s = to_seconds(ready_at);
  result_.replicas.push_back(std::move(o));
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
  for (size_t j = 0; j < ready_.size(); ++j) {
    views_[j] = view(ready_[j]);
    live += views_[j].live;
  }
  for (size_t i : draining_) live += engines_[i]->gauges().live;
  const size_t chosen = router_->choose(views_);
  if (chosen >= ready_.size()) throw std::logic_error("Fleet: a router chose no replica");
  const size_t r = ready_[chosen];
  ReplicaOutcome& o = result_.replicas[r];
  ++o.routed;
  if (!o.first_call_s) o.first_call_s = to_seconds(now);
  o.last_call_s = to_seconds(now);
  if (const char* why = gateway_->refuse(now, views_[chosen], live)) {
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

void Fleet::note_ready(Time now) {
  size_t n = 0;
  while (n < starting_.size() && ready_at_[starting_[n]] <= now) {
    // Started in index order with one delay, so ready in index order, after every ready one.
    ready_.push_back(starting_[n++]);
  }
  if (n == 0) return;
  starting_.erase(starting_.begin(), starting_.begin() + static_cast<std::ptrdiff_t>(n));
  views_.resize(ready_.size());
}

double Fleet::read_signal() const {
  const std::string& signal = config_.autoscale->signal;
  double sum = 0;
  for (size_t i : ready_) {
    const ReplicaView v = view(i);
    sum += signal == "sessions"   ? static_cast<double>(v.live)
           : signal == "kv_usage" ? v.kv_usage()
                                  : v.latency_s;
  }
  return sum / static_cast<double>(ready_.size());
}

void Fleet::drain_one(Time now) {
  // The fewest live sessions leaves soonest; the newest among equals.
  size_t best = ready_.size() - 1;
  int64_t fewest = engines_[ready_[best]]->gauges().live;
  for (size_t j = ready_.size() - 1; j-- > 0;) {
    const int64_t live = engines_[ready_[j]]->gauges().live;
    if (live < fewest) {
      fewest = live;
      best = j;
    }
  }
  const size_t i = ready_[best];
  ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(best));
  views_.resize(ready_.size());
  draining_.push_back(i);
  ReplicaOutcome& o = result_.replicas[i];
  o.drained_s = to_seconds(now);
  const Time last = engines_[i]->last_hang_up();
  if (last != kNever && last <= horizon_) o.gone_s = to_seconds(std::max(now, last));
}

void Fleet::read_gateway(Time now) {
  signals_.clear();
  int64_t live = 0;
  for (size_t i : ready_) {
    const EngineGauges g = engines_[i]->gauges();
    live += g.live;
    // Each engine closed its interval at `now` (the same period from 0 s); one without sessions
    // had no frames to measure.
    if (g.live > 0 && !std::isnan(g.signal_s)) signals_.push_back(g.signal_s);
  }
  for (size_t i : draining_) live += engines_[i]->gauges().live;
  const double signal = gateway_->on_reading(now, signals_, live);
  result_.gateway_readings.push_back(
      {to_seconds(now), gateway_->control_cap().value_or(0), live, signal});
}

void Fleet::control_until(Time until, bool calls_left) {
  const bool scaled = config_.autoscale != nullptr;
  while (true) {
    // Computed from the index, not accumulated, so the readings do not drift.
    const Time g =
        calls_left && gateway_period_ > 0 ? (gateway_readings_ + 1) * gateway_period_ : kNever;
    const Time a =
        scaled ? from_seconds(static_cast<double>(readings_ + 1) * config_.autoscale->interval_s)
               : kNever;
    const Time at = std::min(g, a);
    if (at == kNever || at > until) return;
    advance_all(at, true);
    if (scaled) note_ready(at);
    if (g == at) {
      ++gateway_readings_;
      read_gateway(at);
    }
    if (a == at) {
      ++readings_;
      scale_at(at);
    }
  }
}

void Fleet::scale_at(Time at) {
  const AutoscaleConfig& a = *config_.autoscale;
  const auto ready = static_cast<int64_t>(ready_.size());
  const auto starting = static_cast<int64_t>(starting_.size());
  const ScaleDecision d = decide_scale(a, read_signal(), ready, starting);
  const Time ready_at = at + from_seconds(a.startup_s);
  for (int64_t k = 0; k < d.start; ++k) {
    add_replica(0, static_cast<int64_t>(engines_.size()), at, ready_at);
    ++result_.scale_ups;
  }
  if (d.drain) {
    drain_one(at);
    ++result_.drains;
  }
  note_ready(at);  // a start-up of 0 s takes calls at once
}

FleetResult Fleet::run(int threads, Progress* progress) {
  for (auto& e : engines_) e->begin();
  begun_ = true;
  const bool scaled = config_.autoscale != nullptr;
  // Progress counts replica-seconds simulated (the total is the horizon's whole seconds x the
  // replicas); an autoscaled fleet's replica count changes, so it counts the fleet's seconds.
  // After the last call each replica is brought up to each second's instant as if a call might
  // come there, which changes nothing it does (Engine::advance).
  const Time tick = from_seconds(1.0);
  const int64_t per_second = scaled ? 1 : static_cast<int64_t>(engines_.size());
  Time shown = 0;
  std::optional<Time> next = arrivals_->next(arrival_rng_);
  while (next && *next <= horizon_) {
    const Time t = *next;
    // The call's length first, then the next arrival: separate streams, so the order is free.
    const double duration_s = durations_->sample(duration_rng_);
    next = arrivals_->next(arrival_rng_);
    control_until(t, true);
    advance_all(t, true);
    if (scaled) note_ready(t);
    offer(t, duration_s);
    if (t / tick * tick > shown) {
      if (progress) progress->add(per_second * ((t / tick * tick - shown) / tick));
      shown = t / tick * tick;
    }
  }
  if (scaled) {
    control_until(horizon_, false);
    if (progress) progress->add((horizon_ / tick * tick - shown) / tick);
    shown = horizon_ / tick * tick;
  }
  // No call is left to place: the replicas run on alone to the horizon.
  const size_t n = engines_.size();
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
