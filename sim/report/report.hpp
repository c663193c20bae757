#pragma once
// Results for people (a readable summary, every number with its unit) and for programs (JSON, the
// field names of docs/json.md, SI units).
#include <nlohmann/json.hpp>
#include <string>

#include "sim/simulation.hpp"

namespace micsim {

nlohmann::json to_json(const SimulationResult& r);
SimulationResult result_from_json(const nlohmann::json& j);  // inverse of to_json (throws on a malformed object)
// to_json plus an "exact" block with the byte counts that to_json rounds to integers, so that
// result_from_json gives back the same doubles: for micsim's own files and exchanges (plan
// checkpoints, MPI ranks), where a resumed or distributed plan must equal an uninterrupted one.
nlohmann::json to_exact_json(const SimulationResult& r);
std::string format_summary(const SimulationResult& r);
// One sentence on why a step does not fit in GPU memory and what would: how many GPUs the model states
// must be sharded over, or that the per-GPU working set alone is too large (and which knobs shrink it).
std::string memory_shortfall_text(const MemoryEstimate& m, int world_size);

// "12.3 GiB", "1.23 s", "456 us": short human forms used across reports.
std::string human_bytes(double bytes);
std::string human_seconds(double s);

}  // namespace micsim
