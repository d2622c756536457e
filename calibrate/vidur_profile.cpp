#include "calibrate/vidur_profile.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/config_error.h"
#include "calibrate/csv_table.h"

namespace metronome::calibrate {
namespace fs = std::filesystem;

double VidurMlpRow::layer_seconds() const {
  double t = 0;
  for (size_t i = 1; i < seconds.size(); ++i) t += seconds[i];
  return t;
}

namespace {

const std::array<std::string_view, 8> kShapeColumns = {
    "n_head",     "n_kv_head",     "n_embd",     "n_expanded_embd",
    "vocab_size", "use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"};

std::string median_column(std::string_view op) {
  return "time_stats." + std::string(op) + ".median";
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The directory that holds mlp.csv for this model and GPU.
fs::path locate(const std::string& dir, const std::string& model, const std::string& gpu) {
  const fs::path d(dir);
  std::error_code ec;
  if (!fs::is_directory(d, ec))
    throw ConfigError(dir + ": not a directory (expected a Vidur profile directory)");
  if (is_file(d / "mlp.csv")) return d;
  if (!model.empty() && is_file(d / model / "mlp.csv")) return d / model;
  std::vector<fs::path> roots = {d, d / "data" / "profiling" / "compute"};
  for (const auto& root : roots) {
    if (!fs::is_directory(root, ec)) continue;
    if (!gpu.empty()) {
      if (is_file(root / gpu / model / "mlp.csv")) return root / gpu / model;
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (e.is_directory() && is_file(e.path() / model / "mlp.csv")) found.push_back(e.path());
    }
    std::sort(found.begin(), found.end());
    if (found.size() == 1) return found[0] / model;
    if (found.size() > 1) {
      std::string names;
      for (const auto& f : found) names += (names.empty() ? "" : ", ") + f.filename().string();
      throw ConfigError(dir + ": model \"" + model + "\" is profiled on several GPUs (" + names +
                        "): choose one with --gpu");
    }
  }
  throw ConfigError(dir + ": no mlp.csv for model \"" + model + "\"" +
                    (gpu.empty() ? "" : " on GPU \"" + gpu + "\"") +
                    " (looked for mlp.csv, <model>/mlp.csv, <gpu>/<model>/mlp.csv and "
                    "data/profiling/compute/<gpu>/<model>/mlp.csv)");
}

void read_mlp(const std::string& path, int tp, VidurProfile& p) {
  const CsvTable t = CsvTable::read(path);
  std::array<size_t, kShapeColumns.size()> sc{};
  for (size_t i = 0; i < kShapeColumns.size(); ++i) {
    sc[i] = t.require(std::string(kShapeColumns[i]), "the profiled layer shape");
  }
  std::array<size_t, kVidurMlpOps.size()> oc{};
  for (size_t i = 0; i < kVidurMlpOps.size(); ++i) {
    oc[i] = t.require(median_column(kVidurMlpOps[i]),
                      "median time of op " + std::string(kVidurMlpOps[i]) + ", ms");
  }
  std::set<int64_t> tp_seen;
  bool have_shape = false;
  std::array<int64_t, 6> shape{};
  for (size_t r = 0; r < t.rows(); ++r) {
    const int64_t row_tp = t.integer(r, sc[7]);
    tp_seen.insert(row_tp);
    if (row_tp != tp) continue;
    std::array<int64_t, 6> s = {t.integer(r, sc[0]), t.integer(r, sc[1]),
                                t.integer(r, sc[2]), t.integer(r, sc[3]),
                                t.integer(r, sc[4]), t.boolean(r, sc[5]) ? 1 : 0};
    if (!have_shape) {
      shape = s;
      have_shape = true;
      if (s[0] < 1 || s[1] < 1 || s[2] < 1 || s[3] < 1 || s[4] < 1 || s[2] % s[0] != 0) {
        throw ConfigError(path + ":" + std::to_string(t.line(r)) +
                          ": layer shape: expected positive n_head, n_kv_head, n_embd, "
                          "n_expanded_embd, vocab_size with n_embd a multiple of n_head");
      }
    } else if (s != shape) {
      throw ConfigError(path + ":" + std::to_string(t.line(r)) +
                        ": a row of another layer shape (n_head, n_kv_head, n_embd, "
                        "n_expanded_embd, vocab_size, use_gated_mlp): one model per file");
    }
    VidurMlpRow row;
    row.tokens = t.integer(r, sc[6]);
    row.line = t.line(r);
    if (row.tokens < 1) {
      throw ConfigError(path + ":" + std::to_string(row.line) +
                        ": column \"num_tokens\": expected >= 1");
    }
    for (size_t i = 0; i < oc.size(); ++i) {
      const double ms = t.number(r, oc[i]);
      if (ms < 0) {
        throw ConfigError(path + ":" + std::to_string(row.line) + ": column \"" +
                          median_column(kVidurMlpOps[i]) + "\": expected a time >= 0 ms");
      }
      row.seconds[i] = ms * 1e-3;
    }
    if (!(row.layer_seconds() > 0)) {
      throw ConfigError(path + ":" + std::to_string(row.line) +
                        ": every per-layer op time is 0: expected a measured layer");
    }
    p.mlp.push_back(row);
  }
  // An op that took no time in any row was not measured (a zero column): its roofline feature has
  // nothing to fit against.
  for (size_t i = 0; i < oc.size(); ++i) {
    bool any = false;
    for (const auto& row : p.mlp) any = any || row.seconds[i] > 0;
    if (!p.mlp.empty() && !any) {
      throw ConfigError(path + ": column \"" + median_column(kVidurMlpOps[i]) +
                        "\": 0 ms in every row; expected the op's measured times (> 0 ms)");
    }
  }
  if (p.mlp.empty()) {
    std::string seen;
    for (auto v : tp_seen) seen += (seen.empty() ? "" : ", ") + std::to_string(v);
    throw ConfigError(path + ": no rows with num_tensor_parallel_workers " + std::to_string(tp) +
                      " (the file has: " + (seen.empty() ? "none" : seen) + ")");
  }
  // Vidur's files repeat a few token counts (re-profiled points); all rows are kept, as Vidur's
  // own predictor keeps them, ordered by their times among equal counts so that the held-out split
  // does not depend on the order of the file's rows.
  std::sort(p.mlp.begin(), p.mlp.end(), [](const VidurMlpRow& a, const VidurMlpRow& b) {
    if (a.tokens != b.tokens) return a.tokens < b.tokens;
    return a.seconds < b.seconds;
  });
  const int64_t heads = shape[0], kv = shape[1], hidden = shape[2], ffn = shape[3];
  if (heads % tp != 0 || ffn % tp != 0) {
    throw ConfigError(path + ": tensor parallel " + std::to_string(tp) +
                      " does not divide n_head and n_expanded_embd");
  }
  LayerShape& ls = p.shape;
  ls.hidden = hidden;
  ls.heads = heads / tp;
  ls.kv_heads = std::max<int64_t>(1, kv / tp);
  ls.head_dim = hidden / heads;
  ls.ffn = ffn / tp;
  ls.vocab = shape[4];
  ls.gated_mlp = shape[5] != 0;
  ls.weight_bytes_per_element = 2;  // Vidur profiles fp16
  ls.activation_bytes_per_element = 2;
}

void read_attention(const std::string& path, int tp, VidurProfile& p) {
  const CsvTable t = CsvTable::read(path);
  const size_t c_tp = t.require("num_tensor_parallel_workers", "tensor parallel degree");
  const size_t c_batch = t.require("batch_size", "sequences in the batch");
  const size_t c_chunk = t.require("prefill_chunk_size", "prefill tokens");
  const size_t c_kv = t.require("kv_cache_size", "cached tokens per sequence");
  const size_t c_pre = t.require("is_prefill", "prefill or decode");
  const size_t c_tp_pre = t.require(median_column("attn_prefill"), "prefill attention, ms");
  const size_t c_tp_dec = t.require(median_column("attn_decode"), "decode attention, ms");
  std::vector<size_t> extra;
  for (const char* op : {"attn_kv_cache_save", "attn_input_reshape", "attn_output_reshape"}) {
    if (t.has(median_column(op))) extra.push_back(t.require(median_column(op), ""));
  }
  if (t.has("attention_backend") && t.rows() > 0) {
    p.attention_backend = t.cell(0, t.require("attention_backend", ""));
  }
  for (size_t r = 0; r < t.rows(); ++r) {
    if (t.integer(r, c_tp) != tp) continue;
    VidurAttentionRow a;
    a.line = t.line(r);
    a.batch = t.integer(r, c_batch);
    a.prefill = t.boolean(r, c_pre);
    a.chunk = a.prefill ? t.integer(r, c_chunk) : 1;
    a.kv_cache = t.integer(r, c_kv);
    if (a.batch < 1 || a.chunk < 1 || a.kv_cache < 0) {
      throw ConfigError(path + ":" + std::to_string(a.line) +
                        ": expected batch_size >= 1, prefill_chunk_size >= 1 for a prefill "
                        "row, kv_cache_size >= 0");
    }
    double ms = t.number(r, a.prefill ? c_tp_pre : c_tp_dec);
    for (size_t c : extra) {
      if (!t.empty_cell(r, c)) ms += t.number(r, c);
    }
    if (!(ms > 0)) {
      throw ConfigError(path + ":" + std::to_string(a.line) + ": column \"" +
                        median_column(a.prefill ? "attn_prefill" : "attn_decode") +
                        "\": expected a time > 0 ms");
    }
    a.seconds = ms * 1e-3;
    p.attention.push_back(a);
  }
}

}  // namespace

std::vector<std::string> vidur_mlp_required_columns() {
  std::vector<std::string> c;
  for (auto s : kShapeColumns) c.emplace_back(s);
  for (auto op : kVidurMlpOps) c.push_back(median_column(op));
  return c;
}

VidurProfile read_vidur_profile(const std::string& dir, const std::string& model,
                                const std::string& gpu, int tensor_parallel) {
  if (tensor_parallel < 1) throw ConfigError("--tp: expected >= 1");
  const fs::path where = locate(dir, model, gpu);
  VidurProfile p;
  p.model = model;
  p.gpu = gpu;
  // <root>/<gpu>/<org>/<name>/mlp.csv: recover the GPU from the layout when not given.
  if (p.gpu.empty() && !model.empty() && where != fs::path(dir)) {
    fs::path up = where;
    const fs::path model_path(model);
    for (auto it = model_path.begin(); it != model_path.end(); ++it) up = up.parent_path();
    if (up != fs::path(dir) && up.parent_path() != up) p.gpu = up.filename().string();
  }
  p.tensor_parallel = tensor_parallel;
  p.mlp_path = (where / "mlp.csv").string();
  read_mlp(p.mlp_path, tensor_parallel, p);
  if (is_file(where / "attention.csv")) {
    p.attention_path = (where / "attention.csv").string();
    read_attention(p.attention_path, tensor_parallel, p);
  }
  return p;
}

}  // namespace metronome::calibrate
