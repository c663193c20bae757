#pragma once
// The training-throughput corpus (validation/data/training-corpus/*.csv and the MosaicML A100 table):
// published runs with their configurations, each turned into a scenario and compared on tokens/s per
// GPU (every published metric is converted there with the source's own FLOP convention). Scored out of
// sample: the constants fitted on the corpus are fitted on the other source groups only when a group
// is scored (leave one source out). See validation/data/training-corpus/README.md for the rows.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/calibration/error_bands.hpp"
#include "models/compute/compute_model.hpp"
#include "sim/simulation.hpp"

namespace micsim {

struct CorpusRow {
  GpuArch arch = GpuArch::Ampere;       // of the GPU (which sustained-GEMM constant applies)
  std::string id, source, source_group, file;
  int line = 0;
  std::string gpu, framework, strategy, metric, series, precision, checkpointing, model;
  // The error bands' strategy family: whether the run shards its parameters (shards_parameters, as
  // `simulate` decides it; FSDP's SHARD_GRAD_OP does); SageMaker's sharded data parallelism is MiCS.
  bool sharded() const;
  int gpus = 0;
  int64_t seq_len = 0, micro_batch = 0;
  bool compile = false;
  bool triton_attention = false;        // runs FlashAttention in Triton (its constant is fitted only on such rows)
  double published = 0;                 // tokens/s per GPU, converted from `metric`
  std::string convention;               // the source's FLOP convention (for the conversion)
  std::string scenario_yaml;            // generated (a YAML tree, never CSV text pasted into YAML)
  std::vector<std::string> assumptions; // configuration the source does not publish
  std::string skip_reason;              // why it is not compared ("" = compared)
};

// Loads every CSV of the corpus directory (and the MosaicML A100 table if present beside it).
std::vector<CorpusRow> load_training_corpus(const std::string& dir);

// The prior on `interference` (compute speed lost while a collective runs on the GPU): the published
// measurements span 0.16 (Lee et al. 2025, arXiv 2507.03114: compute kernels 18.9 % slower on average
// under overlap, A100/H100, 4 GPUs) to 0.30 (Echo, arXiv 2412.12487: 1.38-1.48x on H800 under
// Megatron-LM); the prior is their middle with their spread as one standard deviation:
// (interference - centre) / sigma is one more residual of the corpus fit.
constexpr double kInterferencePrior = 0.23, kInterferencePriorSigma = 0.07;

// Constants fitted on the corpus (the rest of the model comes from the catalog and the kernel data).
struct CorpusConstants {
  double host_launch_s = 0;             // CPU time per kernel launch (launch-bound passes; not fitted)
  double attention_scale_ampere = 1.0;  // in-training attention vs the kernel benchmarks (Ampere and Volta rows)
  double attention_scale_hopper = 1.0;  // the same on Hopper (the kernel data differ per GPU in pass and head size)
  double memory_pressure_slowdown = 0.25;
  double jitter_cv = 0.01;              // per-rank compute-time noise (coefficient of variation)
  double jitter_window_exponent = 0;    // how that CV shrinks over longer micro-steps (0: it does not); fit start
  double straggler_stalls_per_gpu_hour = 0, straggler_stall_ms = 0;  // rare long stalls (models/compute/stragglers.hpp); fit start
  double gemm_scale_volta = 1.0, gemm_scale_ampere = 1.0, gemm_scale_hopper = 1.0;  // sustained GEMMs per generation
  double triton_attention_scale = 1.0;  // FlashAttention in Triton against the paper's FA2 ratios
  double interference = kInterferencePrior;  // compute speed lost while a collective runs (docs/model.md sec 2.5); fit start
  static const std::vector<std::string>& names();
  std::vector<double> values() const;
  static CorpusConstants from(const std::vector<double>& v);
};

struct CorpusPrediction {
  const CorpusRow* row = nullptr;
  double predicted = 0;                 // tokens/s per GPU
  bool fits = true;
  double memory_utilisation = 0;  // peak / usable memory (what the allocator-pressure slowdown reads)
  double error() const { return predicted / row->published - 1; }
};

// Simulates the comparable rows with the given constants (analytic engine; threads = every core).
std::vector<CorpusPrediction> predict_corpus(const std::vector<CorpusRow>& rows, const CorpusConstants& k, int threads = 0);

// Scaling series among `preds` (rows sharing a `series` name): the predictions at the smallest and the
// largest GPU count of each series that spans more than one (the first of equals, in `preds` order).
std::vector<std::pair<const CorpusPrediction*, const CorpusPrediction*>> scaling_series_ends(const std::vector<CorpusPrediction>& preds);

// Fits the constants on `rows` (Levenberg-Marquardt on log(predicted/published), Huber), and on the
// per-GPU throughput change of every scaling series among them (what the jitter and straggler terms
// determine; see scaling_series_residuals).
CorpusConstants fit_corpus_constants(const std::vector<CorpusRow>& rows, const CorpusConstants& start, int threads = 0);

// The weak prior on every multiplicative scale constant fitted on training runs (the corpus fit and
// `calibrate --runs`): log(scale / centre) / kScalePriorSigma is one more residual per constant.
constexpr double kScalePriorSigma = 0.2;

struct SourceScore {
  std::string group;
  size_t rows = 0;
  double mape = 0, median_abs = 0, p90_abs = 0, mean_signed = 0;
};
SourceScore score(const std::string& group, const std::vector<double>& errors);

// Leave one source group out: each group predicted with constants fitted on the others.
struct HeldOutCorpus {
  std::vector<CorpusPrediction> predictions;              // every comparable row, held out
  std::map<std::string, CorpusConstants> constants;       // per held-out group
};
HeldOutCorpus held_out_corpus(const std::vector<CorpusRow>& rows, const CorpusConstants& start, int threads = 0);

// 90 % bands of predicted/published - 1 per GPU generation and strategy family, from held-out
// predictions, every source group weighing the same: the random-effects interval of a new source's row
// (validation/prediction_interval.hpp); classes whose rows come from fewer than `min_sources` source
// groups fall back to coarser ones. Ten: the between-source spread is estimated from the groups' means,
// and from fewer than ten it is too uncertain to tell one class from another.
std::vector<ErrorBand> error_bands(const std::vector<CorpusPrediction>& held_out, int min_sources = 10);
// The bands as models/catalog/error_bands.yaml holds them.
std::string error_bands_yaml(const std::vector<ErrorBand>& bands, const std::string& source, int min_sources);
// Coverage of the bands on rows they were not made from: each source group's rows against bands
// built from the other groups' held-out residuals. Reported per row and per source group (the mean
// of each group's fraction: how often a new source's run falls in its band).
struct BandCoverage {
  struct Group {
    std::string group;
    int inside = 0, rows = 0;
  };
  double row_coverage = 0, per_source = 0;
  size_t rows = 0;
  std::vector<Group> groups;
};
BandCoverage band_coverage(const std::vector<CorpusPrediction>& held_out, int min_sources = 10);

}  // namespace micsim
