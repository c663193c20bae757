#pragma once
// Published training results vs micsim: each row of a dataset becomes a scenario (model, cluster,
// batch layout, strategy as published), simulated with the analytic engine and compared on the
// row's own metric in the row's own FLOP convention.
//   mosaicml-fsdp-a100.csv   MFU (llm-foundry: 6N + 12·L·h·s per token, no recompute = micsim's mfu)
//   training-results.csv     FSDP GPT-175B TFLOPS/GPU (Megatron formula with recompute = micsim's
//                            hw_tflops_per_gpu); IBM FSDP MFU (PaLM convention); MiCS rows are claims
//                            over many runs (scripts/reproduce-mics-paper compares them).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace micsim {

struct TrainingRow {
  std::string dataset, id, source, file;
  int line = 0;
  std::string metric;          // mfu | tflops_per_gpu | hw_tflops_per_gpu
  double published = 0;
  std::string convention;      // how the source counts FLOPs
  std::string scenario_yaml;   // empty when not comparable
  std::string skip_reason;
  std::string assumptions;     // settings the source does not publish
  std::optional<long long> published_params;  // parameter count the source gives
};

bool is_training_dataset(const std::string& path);
std::vector<TrainingRow> load_training_dataset(const std::string& path);
std::vector<TrainingRow> parse_training_dataset(const std::string& text, const std::string& shown_name);

struct TrainingComparison {
  TrainingRow row;
  double predicted = 0;
  long long params = 0;
  bool fits = true;
  double error() const { return (predicted - row.published) / row.published; }
};
std::vector<TrainingComparison> compare_training(const std::vector<TrainingRow>& rows);

}  // namespace micsim
