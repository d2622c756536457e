// Importing Vidur's measured profiles: the shipped H100 and A100 files, a third directory made from
// them in another layout (columns and rows reordered, a synthetic attention.csv of known
// coefficients), refusals naming file and column, the fitted roofline correction against the
// measurements and against the shipped GPU files, and the calibration scaled to another layer
// shape.
#include "calibrate/vidur_import.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/config_error.h"
#include "calibrate/csv_table.h"
#include "calibrate/fit.h"
#include "calibrate/pipeline.h"
#include "calibrate/roofline_correction_fit.h"
#include "calibrate/vidur_profile.h"
#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/corrected_roofline_cost_model.h"
#include "tests/expect_error.h"

namespace metronome::calibrate {
namespace {

namespace fs = std::filesystem;

const std::string kVidur = std::string(METRONOME_SOURCE_DIR) + "/results/vidur";
const std::string kLlama2 = "meta-llama/Llama-2-7b-hf";
const std::string kLlama3 = "meta-llama/Meta-Llama-3-8B";

fs::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path d = fs::temp_directory_path() / "metronome_vidur_test" / info->name();
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string quote(const std::string& s) {
  return s.find_first_of(",\"\n") == std::string::npos ? s : "\"" + s + "\"";
}

// Writes `t` with its columns in `order` (indices) and its rows reversed when asked.
void write_csv(const CsvTable& t, const fs::path& path, bool reverse_columns, bool reverse_rows) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path);
  const size_t w = t.header().size();
  auto col = [&](size_t i) { return reverse_columns ? w - 1 - i : i; };
  for (size_t i = 0; i < w; ++i) out << (i ? "," : "") << quote(t.header()[col(i)]);
  out << "\n";
  for (size_t k = 0; k < t.rows(); ++k) {
    const size_t r = reverse_rows ? t.rows() - 1 - k : k;
    for (size_t i = 0; i < w; ++i) out << (i ? "," : "") << quote(t.cell(r, col(i)));
    out << "\n";
  }
}

std::string h100_csv() { return kVidur + "/h100/" + kLlama2 + "/mlp.csv"; }
std::string a100_csv() { return kVidur + "/a100/" + kLlama3 + "/mlp.csv"; }

VidurImport import_dir(const std::string& dir, const std::string& model, const std::string& gpu) {
  return import_vidur(read_vidur_profile(dir, model, gpu, 1), {});
}

double term(const Calibration& c, CostTerm t) {
  for (const auto& x : c.terms)
    if (x.term == t && !x.dropped) return x.coefficient;
  return 0;
}

TEST(VidurImport, ShippedFilesGiveMeasuredCalibrationsAndMeetTheErrorGoal) {
  for (const auto& [model, gpu, name, rows] :
       {std::tuple{kLlama2, "h100", "llama-2-7b", 261}, {kLlama3, "a100", "llama-3-8b", 456}}) {
    SCOPED_TRACE(gpu);
    const VidurProfile p = read_vidur_profile(kVidur, model, "", 1);
    EXPECT_EQ(p.gpu, gpu);  // recovered from the layout
    EXPECT_EQ(static_cast<int>(p.mlp.size()), rows);
    const VidurImport r = import_vidur(p, {});
    EXPECT_EQ(r.model_name, name);
    EXPECT_EQ(r.layers, 32);
    const Calibration c = parse_calibration(r.calibration, "imported.json");
    EXPECT_TRUE(c.measured);
    EXPECT_EQ(c.backend, "gpu");
    EXPECT_TRUE(c.has_scaling);
    // Token-level terms measured, KV terms analytic: the file says which.
    for (const auto& t : c.terms) {
      const bool kv = t.term == CostTerm::kKvReadTokens || t.term == CostTerm::kQkPairs ||
                      t.term == CostTerm::kSessions;
      EXPECT_EQ(t.origin, kv ? "analytic" : "measured") << term_name(t.term);
    }
    EXPECT_GT(c.r2, 0.98);
    EXPECT_LT(c.heldout_median_ape, 0.05);
    // The goal on token-level ops, held out: median < 5%, p90 < 10%.
    const auto& f = r.correction;
    EXPECT_LT(f.after_heldout.median, 0.05);
    EXPECT_LT(f.after_heldout.p90, 0.10);
    EXPECT_NEAR(f.after_heldout.median_ratio, 1.0, 0.05);
    // The datasheet roofline is optimistic by a third or more on these layers.
    EXPECT_GT(f.before_heldout.median, 0.30);
    EXPECT_LT(f.before_heldout.median_ratio, 0.70);
    // Fractions never beat the datasheet; overheads are microseconds per layer.
    for (double x : {f.correction.bandwidth_fraction, f.correction.pointwise_bandwidth_fraction,
                     f.correction.flops_fraction}) {
      EXPECT_GT(x, 0.2);
      EXPECT_LE(x, 1.0);
    }
    EXPECT_GT(f.correction.layer_overhead_s, 1e-6);
    EXPECT_LT(f.correction.layer_overhead_s, 200e-6);
    // Every number finite.
    EXPECT_FALSE(r.calibration.dump().find("nan") != std::string::npos);
  }
}

TEST(VidurImport, ShippedGpuFilesCarryTheFittedCorrection) {
  for (const auto& [model, gpu] : {std::pair{kLlama2, "h100"}, {kLlama3, "a100"}}) {
    SCOPED_TRACE(gpu);
    const auto fit = import_dir(kVidur, model, gpu).correction.correction;
    const auto shipped = load_scenario("", {std::string("gpu=") + gpu}).gpu.roofline_correction;
    ASSERT_TRUE(shipped.present);
    EXPECT_EQ(shipped.fitted_on, gpu);
    // scripts/import_vidur.py rounds to 4 significant digits.
    EXPECT_NEAR(shipped.bandwidth_fraction, fit.bandwidth_fraction, 1e-3 * fit.bandwidth_fraction);
    EXPECT_NEAR(shipped.pointwise_bandwidth_fraction, fit.pointwise_bandwidth_fraction,
                1e-3 * fit.pointwise_bandwidth_fraction);
    EXPECT_NEAR(shipped.flops_fraction, fit.flops_fraction, 1e-3 * fit.flops_fraction);
    EXPECT_NEAR(shipped.layer_overhead_s, fit.layer_overhead_s, 1e-3 * fit.layer_overhead_s);
    EXPECT_NEAR(shipped.pass_overhead_s, fit.pass_overhead_s, 1e-3 * fit.pass_overhead_s);
  }
  // The GPUs without a profile borrow the H100's and say so.
  for (const char* gpu : {"h200", "b200"}) {
    const auto c = load_scenario("", {std::string("gpu=") + gpu}).gpu.roofline_correction;
    EXPECT_EQ(c.fitted_on, "h100") << gpu;
    EXPECT_NE(c.source.find("assumed"), std::string::npos) << gpu;
  }
}

// The simulator's corrected roofline (sim/) and the fit (calibrate/) agree on every op: whole
// passes of the profiled model under the shipped H100 correction match the measured passes.
TEST(VidurImport, CorrectedRooflineCostModelFollowsTheMeasuredPasses) {
  const VidurProfile p = read_vidur_profile(kVidur, kLlama2, "h100", 1);
  const Scenario s = load_scenario("", {"model=llama-2-7b", "gpu=h100"});
  ModelConfig m = s.model;
  m.vocab_size = 0;  // Vidur does not profile the output head
  const CorrectedRooflineCostModel cm(m, s.gpu, 0.0);
  std::vector<double> pred, meas;
  for (const auto& row : p.mlp) {
    PassShape shape;
    shape.sessions = 1;
    shape.query_tokens = row.tokens;
    // Less the KV write, which the profile's token-level ops do not include.
    const double kv_write =
        static_cast<double>(m.kv_bytes_per_token()) * static_cast<double>(row.tokens) /
        (s.gpu.roofline_correction.bandwidth_fraction * s.gpu.memory_bandwidth_bytes_per_s);
    pred.push_back(cm.pass_seconds(shape) - kv_write);
    meas.push_back(32 * row.layer_seconds() + row.seconds[0]);
  }
  const ErrorStats e = error_stats(pred, meas);
  EXPECT_LT(e.median, 0.05);
  EXPECT_LT(e.p90, 0.12);
  EXPECT_NEAR(e.median_ratio, 1.0, 0.05);
  EXPECT_NE(cm.label().find("fitted to h100"), std::string::npos);
}

// A third directory, made from the shipped files in other layouts: a Vidur checkout with the CSV's
// columns and rows reversed plus a synthetic attention.csv, and a flat directory.
TEST(VidurImport, LayoutCompatibleDirectoryGivesTheSameTerms) {
  const fs::path d = temp_dir();
  const fs::path model_dir = d / "data/profiling/compute/h100" / kLlama2;
  write_csv(CsvTable::read(h100_csv()), model_dir / "mlp.csv", true, true);
  // Attention of known cost per layer: 3 us per sequence + 0.05 ns per cached token read
  // + 0.1 ps per query-key pair, on a grid of decode and prefill rows.
  const double c_seq = 3e-6, c_kv = 5e-11, c_qk = 1e-13;
  {
    std::ofstream a(model_dir / "attention.csv");
    a << "n_embd,n_q_head,n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,"
         "batch_size,prefill_chunk_size,kv_cache_size,is_prefill,attention_backend,"
         "time_stats.attn_prefill.median,time_stats.attn_decode.median\n";
    uint64_t seed = 7;
    auto noise = [&seed]() {  // +-1%, deterministic
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      return 1.0 + 0.02 * (static_cast<double>(seed >> 11) / 9007199254740992.0 - 0.5);
    };
    for (int b : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      for (int kv : {128, 512, 1024, 2048, 4096, 8192}) {
        const double qk = static_cast<double>(b) * (kv + 1);
        const double ms = 1e3 * (c_seq * b + c_kv * b * kv + c_qk * qk) * noise();
        a << "4096,32,32,16,1,8192," << b << ",0," << kv << ",False,FLASHINFER,," << ms << "\n";
      }
    }
    for (int chunk : {16, 64, 256, 1024, 2048}) {
      for (int kv : {0, 1024, 4096}) {
        const double qk = static_cast<double>(chunk) * kv + chunk * (chunk + 1.0) / 2;
        const double ms = 1e3 * (c_seq + c_kv * kv + c_qk * qk) * noise();
        a << "4096,32,32,16,1,8192,1," << chunk << "," << kv << ",True,FLASHINFER," << ms << ",\n";
      }
    }
  }
  const VidurProfile p = read_vidur_profile(d.string(), kLlama2, "", 1);
  EXPECT_EQ(p.gpu, "h100");
  ASSERT_FALSE(p.attention_path.empty());
  EXPECT_EQ(p.attention_backend, "FLASHINFER");
  const VidurImport r = import_vidur(p, {});
  const VidurImport shipped = import_dir(kVidur, kLlama2, "h100");
  const Calibration c = parse_calibration(r.calibration, "third.json");
  const Calibration s = parse_calibration(shipped.calibration, "shipped.json");
  for (CostTerm t : {CostTerm::kFixed, CostTerm::kQueryTokens}) {
    EXPECT_NEAR(term(c, t), term(s, t), 1e-9 * term(s, t)) << term_name(t);
  }
  // The attention terms come from attention.csv now, x 32 layers, within the noise.
  ASSERT_TRUE(r.attention_fit.has_value());
  EXPECT_NEAR(term(c, CostTerm::kSessions), 32 * c_seq, 0.03 * 32 * c_seq);
  EXPECT_NEAR(term(c, CostTerm::kKvReadTokens), 32 * c_kv, 0.03 * 32 * c_kv);
  EXPECT_NEAR(term(c, CostTerm::kQkPairs), 32 * c_qk, 0.05 * 32 * c_qk);
  for (const auto& t : c.terms) EXPECT_EQ(t.origin, "measured") << term_name(t.term);

  // Flat: a directory holding mlp.csv directly (the GPU must then be named).
  const fs::path flat = d / "flat";
  write_csv(CsvTable::read(a100_csv()), flat / "mlp.csv", false, true);
  const std::string no_gpu = error_of([&] { import_dir(flat.string(), kLlama3, ""); });
  EXPECT_NE(no_gpu.find("--gpu"), std::string::npos) << no_gpu;
  const Calibration f =
      parse_calibration(import_dir(flat.string(), kLlama3, "a100").calibration, "f");
  const Calibration a = parse_calibration(import_dir(kVidur, kLlama3, "a100").calibration, "a");
  EXPECT_NEAR(term(f, CostTerm::kQueryTokens), term(a, CostTerm::kQueryTokens),
              1e-9 * term(a, CostTerm::kQueryTokens));
}

TEST(VidurImport, RefusesBadInputNamingFileAndColumn) {
  const fs::path d = temp_dir();
  const CsvTable t = CsvTable::read(h100_csv());
  // A missing op column.
  {
    std::ofstream out(d / "mlp.csv");
    std::string skip = "time_stats.mlp_act.median";
    size_t skip_i = 0;
    for (size_t i = 0, k = 0; i < t.header().size(); ++i) {
      if (t.header()[i] == skip) {
        skip_i = i;
        continue;
      }
      out << (k++ ? "," : "") << t.header()[i];
    }
    out << "\n";
    for (size_t r = 0; r < 5; ++r) {
      for (size_t i = 0, k = 0; i < t.header().size(); ++i)
        if (i != skip_i) out << (k++ ? "," : "") << t.cell(r, i);
      out << "\n";
    }
  }
  std::string e = error_of([&] { read_vidur_profile(d.string(), kLlama2, "h100", 1); });
  EXPECT_NE(e.find((d / "mlp.csv").string()), std::string::npos) << e;
  EXPECT_NE(e.find("\"time_stats.mlp_act.median\" missing"), std::string::npos) << e;
  // A value that is not a number: file, line and column.
  {
    std::ofstream out(d / "mlp.csv");
    for (size_t i = 0; i < t.header().size(); ++i) out << (i ? "," : "") << t.header()[i];
    out << "\n";
    for (size_t r = 0; r < 3; ++r) {
      for (size_t i = 0; i < t.header().size(); ++i) {
        const bool bad = r == 1 && t.header()[i] == "time_stats.attn_rope.median";
        out << (i ? "," : "") << (bad ? "fast" : t.cell(r, i));
      }
      out << "\n";
    }
  }
  e = error_of([&] { read_vidur_profile(d.string(), kLlama2, "h100", 1); });
  EXPECT_NE(e.find("mlp.csv:3: column \"time_stats.attn_rope.median\": \"fast\": expected a "
                   "finite number"),
            std::string::npos)
      << e;
  // A missing shape column.
  {
    std::ofstream out(d / "mlp.csv");
    out << "num_tokens,time_stats.emb.median\n1,0.01\n";
  }
  e = error_of([&] { read_vidur_profile(d.string(), kLlama2, "h100", 1); });
  EXPECT_NE(e.find("column \"n_head\" missing"), std::string::npos) << e;
  // A row of another width.
  {
    std::ofstream out(d / "mlp.csv");
    out << "a,b\n1,2\n3\n";
  }
  e = error_of([&] { read_vidur_profile(d.string(), kLlama2, "h100", 1); });
  EXPECT_NE(e.find("mlp.csv:3: 1 fields, the header has 2"), std::string::npos) << e;
  // No rows of the asked tensor-parallel degree; an unknown model; a missing directory.
  e = error_of([] { read_vidur_profile(kVidur, kLlama2, "h100", 3); });
  EXPECT_NE(e.find("no rows with num_tensor_parallel_workers 3 (the file has: 1, 2, 4, 8)"),
            std::string::npos)
      << e;
  e = error_of([] { read_vidur_profile(kVidur, "org/none", "", 1); });
  EXPECT_NE(e.find("no mlp.csv for model \"org/none\""), std::string::npos) << e;
  e = error_of([] { read_vidur_profile("/nonexistent/vidur", kLlama2, "", 1); });
  EXPECT_NE(e.find("not a directory"), std::string::npos) << e;
  // The same model under two GPUs: which one?
  const fs::path two = d / "two";
  write_csv(t, two / "h100" / kLlama2 / "mlp.csv", false, false);
  write_csv(t, two / "a100" / kLlama2 / "mlp.csv", false, false);
  e = error_of([&] { read_vidur_profile(two.string(), kLlama2, "", 1); });
  EXPECT_NE(e.find("several GPUs (a100, h100): choose one with --gpu"), std::string::npos) << e;
  // A tensor-parallel slice has no model of its shape in the catalog: --layers is needed.
  e = error_of([] { import_vidur(read_vidur_profile(kVidur, kLlama2, "h100", 2), {}); });
  EXPECT_EQ(e, "");  // the catalog's llama-2-7b matches its tp 2 slice
}

// A column named twice was read from its first copy without a word.
TEST(VidurImport, DuplicateColumnIsRefused) {
  const std::string e = error_of(
      [] { CsvTable::parse("num_tokens,time_stats.add.median,num_tokens\n1,2,3\n", "p.csv"); });
  EXPECT_EQ(e,
            "p.csv:1: column \"num_tokens\" appears twice in the header; expected each column "
            "once");
}

// A profile whose mlp_up_proj median is 0 in every row crashed Eigen's QR inside the
// roofline correction fit (all four parameters pinned, a matrix of no columns). The reader now
// refuses the zero column, and the fit never solves for no parameters.
TEST(VidurImport, ZeroOpColumnIsRefusedAndTheFitNeverCrashes) {
  const fs::path d = temp_dir();
  const CsvTable t = CsvTable::read(h100_csv());
  {
    std::ofstream out(d / "mlp.csv");
    for (size_t i = 0; i < t.header().size(); ++i) out << (i ? "," : "") << t.header()[i];
    out << "\n";
    for (size_t r = 0; r < t.rows(); ++r) {
      for (size_t i = 0; i < t.header().size(); ++i) {
        const bool zero = t.header()[i] == "time_stats.mlp_up_proj.median";
        out << (i ? "," : "") << (zero ? "0" : t.cell(r, i));
      }
      out << "\n";
    }
  }
  const std::string e = error_of([&] { read_vidur_profile(d.string(), kLlama2, "h100", 1); });
  EXPECT_NE(e.find((d / "mlp.csv").string() +
                   ": column \"time_stats.mlp_up_proj.median\": 0 ms in every row; expected the "
                   "op's measured times (> 0 ms)"),
            std::string::npos)
      << e;
  // The fit itself, given such rows directly: an answer or a FitError, never a crash.
  VidurProfile p = read_vidur_profile(kVidur, kLlama2, "h100", 1);
  for (auto& row : p.mlp) row.seconds[6] = 0;  // mlp_up_proj
  const GpuConfig gpu = load_scenario("", {"gpu=h100"}).gpu;
  try {
    const RooflineCorrectionFit f = fit_roofline_correction(p, gpu, 4);
    EXPECT_TRUE(std::isfinite(f.correction.bandwidth_fraction));
  } catch (const FitError&) {
  }
}

TEST(VidurImport, ScalesToAnotherLayerShapeByOpFlopsAndBytes) {
  const Calibration c =
      parse_calibration(import_dir(kVidur, kLlama2, "h100").calibration, "llama2_h100.json");
  const Scenario llama = load_scenario("", {"model=llama-2-7b", "gpu=h100"});
  const Scenario moshi = load_scenario("", {"model=moshi", "gpu=h100"});
  // Scaled to its own shape: the terms do not move.
  const Calibration same = scale_calibration(c, llama.model);
  for (const auto& t : c.terms) {
    EXPECT_NEAR(term(same, t.term), term(c, t.term), 1e-12 + 1e-9 * std::fabs(t.coefficient))
        << term_name(t.term);
  }
  // Moshi: FFN 11264 vs 11008, vocab 32000 vs 32000: only the MLP ops grow (by 2.3%).
  const Calibration m = scale_calibration(c, moshi.model);
  EXPECT_EQ(m.model_name, "moshi");
  EXPECT_NE(m.scaled_from.find("scaled from llama-2-7b"), std::string::npos);
  EXPECT_NE(m.scaled_from.find("FFN 11008"), std::string::npos);
  EXPECT_NE(m.scaled_from.find("FFN 11264"), std::string::npos);
  const double up = term(m, CostTerm::kQueryTokens) / term(c, CostTerm::kQueryTokens);
  EXPECT_GT(up, 1.005);
  EXPECT_LT(up, 1.0 + (11264.0 - 11008.0) / 11008.0);
  // The same ratio the corrected roofline gives for the two shapes, within a percent: both follow
  // each op's FLOPs and bytes.
  const CorrectedRooflineCostModel rl(llama.model, llama.gpu, 0), rm(moshi.model, moshi.gpu, 0);
  for (int64_t n : {1, 64, 512, 4096}) {
    PassShape s;
    s.sessions = 1;
    s.query_tokens = n;
    const CalibratedCostModel cl(c, 0), cm(m, 0);
    EXPECT_NEAR(cm.pass_seconds(s) / cl.pass_seconds(s), rm.pass_seconds(s) / rl.pass_seconds(s),
                0.01)
        << n;
  }
  // KV terms (analytic) follow the KV bytes: same heads, so equal.
  EXPECT_NEAR(term(m, CostTerm::kKvReadTokens), term(c, CostTerm::kKvReadTokens),
              1e-9 * term(c, CostTerm::kKvReadTokens));
  // Through the scenario: a moshi run on the llama file is scaled and says so.
  const fs::path d = temp_dir();
  std::ofstream(d / "cal.json") << import_dir(kVidur, kLlama2, "h100").calibration.dump();
  const Scenario run = load_scenario("", {"model=moshi", "gpu=h100", "cost_model.type=calibrated",
                                          "cost_model.file=" + (d / "cal.json").string()});
  const auto model = make_cost_model(run);
  EXPECT_NE(model->label().find("scaled from llama-2-7b"), std::string::npos) << model->label();
  EXPECT_NE(model->label().find("attention (KV) terms analytic"), std::string::npos);
  // An MoE model cannot borrow a dense profile.
  const Scenario moe = load_scenario("", {"model=qwen3-omni-30b-a3b"});
  const std::string e = error_of([&] { scale_calibration(c, moe.model); });
  EXPECT_NE(e.find("MoE"), std::string::npos) << e;
}

TEST(VidurImport, CorrectedRooflineNeedsTheGpuCorrection) {
  Scenario s = load_scenario("", {"cost_model.type=corrected_roofline"});
  s.gpu.roofline_correction.present = false;
  const std::string e = error_of([&] { make_cost_model(s); });
  EXPECT_NE(e.find("roofline_correction"), std::string::npos) << e;
}

}  // namespace
}  // namespace metronome::calibrate
