#pragma once
// Hand-offs: the files a user runs after micsim picked a configuration, each encoding exactly the
// simulated strategy (groups, micro-batch, accumulation, precision, checkpointing, prefetch):
//   ds_config.json      DeepSpeed (ZeRO stage / MiCS shard size and hierarchical gather)
//   train_fsdp2.py      a runnable PyTorch FSDP2 training skeleton (fully_shard + DeviceMesh for HSDP)
//   torchtitan.toml     a torchtitan job config
//   accelerate.yaml     a Hugging Face accelerate config (FSDP2, parallelism_config for HSDP)
//   megatron_args.sh    Megatron-LM arguments (tensor / pipeline / context / sequence parallelism)
//   HANDOFF.md          how to launch each, what micsim predicted, what the files cannot express
// The API each targets is pinned (versions below) and checked by tests against manifests read from
// the frameworks' sources (validation/data/handoff-apis/).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace micsim {

struct SimulationResult;

// The versions the hand-offs are written for (and checked against).
constexpr const char* kHandoffTorch = "2.6.0";
constexpr const char* kHandoffTorchtitan = "v0.2.2";
constexpr const char* kHandoffAccelerate = "1.14.0";
constexpr const char* kHandoffDeepSpeed = "0.19.5";

struct DeepSpeedHandoff {
  std::optional<nlohmann::json> config;  // none when DeepSpeed cannot express the strategy
  std::vector<std::string> notes;        // what the user must do besides passing the config
};
DeepSpeedHandoff deepspeed_handoff(const Scenario& sc);

std::string fsdp2_script(const Scenario& sc, const SimulationResult* predicted);
std::string torchtitan_toml(const Scenario& sc, std::vector<std::string>* notes);
std::string accelerate_yaml(const Scenario& sc, std::vector<std::string>* notes);
// Megatron-LM pretrain_gpt.py arguments (model-parallel configurations).
std::string megatron_args(const Scenario& sc, std::vector<std::string>* notes);

// The reverse hand-off: an existing DeepSpeed config read as scenario overrides.
struct DeepSpeedOverrides {
  std::vector<Override> overrides;     // scenario keys, each with the ds_config line it came from
  std::vector<std::string> ignored;    // keys read but not modelled
};
// Reads a DeepSpeed config. "auto" values (Hugging Face integration) keep the scenario's value.
// Errors (malformed JSON, wrong types) are InputError with file, line and key.
DeepSpeedOverrides read_deepspeed_config(const std::string& path, int world_size);
DeepSpeedOverrides parse_deepspeed_config(const std::string& text, const std::string& shown_name, int world_size);

struct HandoffFile {
  std::string name, text;
};
// Every hand-off for a scenario (and what micsim predicted for it), with HANDOFF.md.
std::vector<HandoffFile> all_handoffs(const Scenario& sc, const SimulationResult& predicted);

}  // namespace micsim
