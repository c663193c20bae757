#pragma once
// Published Megatron-LM results with full configurations (validation/data/megatron/*.csv): each row
// becomes a scenario with tensor, pipeline (and sequence) parallelism, and the predicted iteration time
// is compared with the published one (TFLOP/s per GPU converted back to seconds with the source's own
// FLOP formula). Nothing is fitted on these rows: every constant comes from the catalog and the
// training corpus, so the errors are out of sample.
#include <string>
#include <vector>

namespace micsim {

struct MegatronRow {
  std::string id, file, source, table, metric;
  int line = 0;
  int gpus = 0, tp = 1, pp = 1, dp = 1, virtual_stages = 1;
  std::string strategy;             // ddp (Megatron data parallelism) or zero3 (Narayanan Table 2 baseline)
  double published = 0;             // as published (TFLOP/s per GPU, seconds, or % of activation memory)
  double published_time_s = 0;      // iteration time implied by it (time rows)
  std::string scenario_yaml;
  std::vector<std::string> assumptions;
  std::string skip_reason;
  std::string family;               // the summary group, where the reader knows it (torchtitan-run sources)
};

struct MegatronPrediction {
  const MegatronRow* row = nullptr;
  double predicted = 0;             // in the row's metric
  double predicted_time_s = 0;
  double peak_memory_gib = 0;
  bool fits = true;
  double error() const { return predicted / row->published - 1; }
};

// Rows of every CSV in `dir` (narayanan2021.csv, korthikanti2022.csv; other files are listed as not read).
std::vector<MegatronRow> load_megatron_rows(const std::string& dir);
std::vector<MegatronPrediction> predict_megatron(const std::vector<MegatronRow>& rows);

// Narayanan et al. 2021, eq. 3: FLOPs of one iteration as Megatron-LM counts them (GEMMs only, with the
// extra forward of full activation recomputation): 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
double narayanan_flops_per_iteration(double batch, double seq, double layers, double hidden, double vocab);

}  // namespace micsim
