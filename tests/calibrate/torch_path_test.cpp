// What the PyTorch device path (calibrate/torch/) reads from the C++ side stays equal to it: the
// grids (calibrate/torch/grids.json) and the KV visibility rule's table (core/kv_window_table.json,
// which the rule's Python port core/kv_window.py is checked against).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "calibrate/pipeline.h"
#include "core/kv_window.h"

namespace metronome::calibrate {
namespace {

const std::string kSource = std::string(METRONOME_SOURCE_DIR) + "/";

nlohmann::json read(const std::string& path) {
  std::ifstream in(kSource + path);
  EXPECT_TRUE(in.good()) << kSource + path;
  return nlohmann::json::parse(in);
}

TEST(TorchPath, GridsFileEqualsTheGrids) {
  EXPECT_EQ(read("calibrate/torch/grids.json"), grids_json())
      << "regenerate with: metronome calibrate grids --out calibrate/torch/grids.json";
}

// The table: every (W, S, q) case's visibility mask over keys 0..q and its key count, from
// core/kv_window.h. Regenerate by running this test with METRONOME_WRITE_KV_TABLE=1.
nlohmann::json kv_table() {
  nlohmann::json cases = nlohmann::json::array();
  for (int64_t w : {-1, 0, 1, 3, 8}) {
    for (int64_t s : {0, 1, 4}) {
      for (int64_t q = 0; q <= 20; ++q) {
        std::string mask;
        for (int64_t k = 0; k <= q; ++k) mask += kv::key_visible(q, k, {w, s}) ? '1' : '0';
        cases.push_back({{"window", w},
                         {"sinks", s},
                         {"q", q},
                         {"mask", mask},
                         {"visible_keys", kv::visible_keys(q, {w, s})}});
      }
    }
  }
  return {{"comment",
           "core/kv_window.h key_visible and visible_keys, written by "
           "tests/calibrate/torch_path_test.cpp; core/kv_window.py is checked against it"},
          {"cases", cases}};
}

TEST(TorchPath, KvWindowTableEqualsTheRule) {
  if (std::getenv("METRONOME_WRITE_KV_TABLE")) {
    std::ofstream(kSource + "core/kv_window_table.json") << kv_table().dump(1) << "\n";
  }
  const nlohmann::json table = kv_table();
  EXPECT_EQ(read("core/kv_window_table.json"), table);
  // The rule itself, by hand: q = 0 sees itself; W = 3, S = 1, q = 10 sees key 0 and keys 7..10.
  EXPECT_EQ(table["cases"][0]["mask"], "1");
  int checked = 0;
  for (const auto& c : table["cases"]) {
    if (c["window"] == 3 && c["sinks"] == 1 && c["q"] == 10) {
      EXPECT_EQ(c["mask"], "10000001111");
      EXPECT_EQ(c["visible_keys"], 5);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1);
}

}  // namespace
}  // namespace metronome::calibrate
