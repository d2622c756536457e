// fleet.gateway.type = "token_bucket": a rate limit on call arrivals. The bucket holds up to
// `burst` tokens, starts full and refills at `rate_per_s`; a call takes one token or is refused
// ("token_bucket"). Over any interval of length t it lets at most burst + rate_per_s x t calls
// through, whatever the replicas' state: it knows nothing of KV or latency.
#pragma once

#include <algorithm>

#include "sim/config/config_limits.h"
#include "sim/fleet/gateway.h"

namespace metronome {

class TokenBucket : public Gateway {
 public:
  TokenBucket(double rate_per_s, double burst) : rate_(rate_per_s), burst_(burst), level_(burst) {}
  const char* refuse(Time now, const ReplicaView&, int64_t) override {
    // Tokens are a count, not a clock: the refill is worked out from integer nanoseconds each time.
    level_ = std::min(burst_, level_ + rate_ * to_seconds(now - last_));
    last_ = now;
    if (level_ < 1) return "token_bucket";
    level_ -= 1;
    return nullptr;
  }

 private:
  double rate_, burst_, level_;
  Time last_ = 0;
};

class TokenBucketPolicy final : public GatewayPolicy {
 public:
  TokenBucketPolicy(double rate, double burst) : rate_(rate), burst_(burst) {}
  std::string type() const override { return "token_bucket"; }
  void write(nlohmann::json& section) const override {
    section["rate_per_s"] = rate_;
    section["burst"] = burst_;
  }
  std::unique_ptr<Gateway> make_gateway(double) const override {
    return std::make_unique<TokenBucket>(rate_, burst_);
  }
  static std::shared_ptr<const GatewayPolicy> parse(JsonSection& g) {
    const double rate = g.in_range("rate_per_s", std::nullopt, 1e-9, 1e9);
    const double burst = g.in_range("burst", 1.0, 1, 1e9);
    return std::make_shared<TokenBucketPolicy>(rate, burst);
  }

 private:
  double rate_, burst_;
};

}  // namespace metronome
