// The backends: the CPU one really allocates the pool and runs the reference kernels over the
// engine's block tables (the reference attention throws if a visible key sits in a released block);
// the GPU one refuses with the reason where it cannot run.
#include "replay/step_backend.h"

#include <gtest/gtest.h>

#include "replay/realtime_engine.h"
#include "tests/replay/fake.h"

namespace metronome::replay {
namespace {

const std::string kDir = std::string(METRONOME_SOURCE_DIR) + "/scenarios/replay/";

BackendConfig config(const Scenario& s) {
  BackendConfig c;
  c.model = model_shape(s.model);
  c.window = s.kv_policy.window();
  c.num_blocks = static_cast<int32_t>(*s.engine.num_blocks);
  c.block_size = static_cast<int32_t>(s.engine.block_size);
  return c;
}

TEST(CpuBackend, AllocatesTheWholePoolInHostMemory) {
  const Scenario s = load_scenario(kDir + "tiny_cpu_windowed.json");
  auto b = make_cpu_backend(config(s));
  // layers x (K and V) x blocks x block_size x kv_heads x head_dim x float
  EXPECT_EQ(b->kv_pool_bytes(), int64_t{2} * 2 * 64 * 16 * 2 * 64 * 4);
  EXPECT_EQ(b->name(), "cpu");
}

// The real kernels under the real engine's bookkeeping, on a jumping clock (compute takes no
// simulated time): windowed across the window's edge and unbounded into the stall.
TEST(CpuBackend, RunsTheEngineAcrossTheWindowEdgeAndIntoTheStall) {
  for (const char* name : {"tiny_cpu_windowed.json", "tiny_cpu_unbounded.json"}) {
    const Scenario s = load_scenario(kDir + name, {"horizon_s=5"});
    auto b = make_cpu_backend(config(s));
    testing::FakeClock clock;
    RealtimeEngine e(s, *b, clock);
    const RealtimeResult r = e.run();
    EXPECT_TRUE(b->output_finite()) << name;
    EXPECT_EQ(r.run.crashed(), !s.kv_policy.bounded()) << name;
    EXPECT_GT(r.run.frames_served, 4 * 40) << name;
  }
}

TEST(GpuBackend, RefusesWithTheReasonWhereItCannotRun) {
  const Scenario s = load_scenario(kDir + "tiny_cpu_windowed.json");
  try {
    auto b = make_gpu_backend(config(s));
    GTEST_SKIP() << "a GPU is present: " << b->device();
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("gpu backend"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--backend cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace metronome::replay
