#pragma once
// Hand-off to the frameworks users run: a DeepSpeed config fragment and a PyTorch FSDP fragment for a
// simulated configuration, and the reverse: an existing DeepSpeed config read as scenario overrides.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace micsim {

// DeepSpeed `ds_config.json` keys for this scenario (ZeRO stage, MiCS shard size and hierarchical
// gather, micro-batch, accumulation, precision, bucket sizes).
nlohmann::json deepspeed_fragment(const Scenario& sc);
// FSDP: sharding strategy and the process-group sizes (FSDP1 HYBRID_SHARD groups; FSDP2 device mesh).
nlohmann::json fsdp_fragment(const Scenario& sc);

struct DeepSpeedOverrides {
  std::vector<Override> overrides;     // scenario keys, each with the ds_config line it came from
  std::vector<std::string> ignored;    // keys read but not modelled
};
// Reads a DeepSpeed config. "auto" values (Hugging Face integration) keep the scenario's value.
// Errors (malformed JSON, wrong types) are InputError with file, line and key.
DeepSpeedOverrides read_deepspeed_config(const std::string& path, int world_size);
DeepSpeedOverrides parse_deepspeed_config(const std::string& text, const std::string& shown_name, int world_size);

}  // namespace micsim
