#pragma once
// Results for people (a readable summary, every number with its unit) and for programs (JSON, the
// field names of DESIGN.md, SI units).
#include <nlohmann/json.hpp>
#include <string>

#include "sim/simulation.hpp"

namespace micsim {

nlohmann::json to_json(const SimulationResult& r);
SimulationResult result_from_json(const nlohmann::json& j);  // inverse of to_json (throws on a malformed object)
std::string format_summary(const SimulationResult& r);

// "12.3 GiB", "1.23 s", "456 us": short human forms used across reports.
std::string human_bytes(double bytes);
std::string human_seconds(double s);

}  // namespace micsim
