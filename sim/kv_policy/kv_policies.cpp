// The KV policies: one line each.
#include "sim/kv_policy/context_cap.h"
#include "sim/kv_policy/kv_policy.h"
#include "sim/kv_policy/periodic_reset.h"
#include "sim/kv_policy/segment_eviction.h"
#include "sim/kv_policy/unbounded.h"
#include "sim/kv_policy/windowed.h"

namespace metronome {

PolicyRegistry<KvPolicy>& kv_policies() {
  static PolicyRegistry<KvPolicy> r = [] {
    PolicyRegistry<KvPolicy> p;
    p.add("unbounded", {}, &UnboundedKv::parse);
    p.add("windowed", {"window_tokens", "sink_tokens"}, &WindowedKv::parse);
    p.add("periodic_reset", {"reset_frames"}, &PeriodicResetKv::parse);
    p.add("context_cap", {"cap_tokens"}, &ContextCapKv::parse);
    p.add("segment_eviction", {"segment_tokens", "segments"}, &SegmentEvictionKv::parse);
    return p;
  }();
  return r;
}

}  // namespace metronome
