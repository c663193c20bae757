#pragma once
// Where each number of a simulation result comes from: the `sources` list that `simulate` prints and
// writes (catalog entries, calibrations, fitted constants, published measurements, formulas), in the
// order shown. One place to look when a figure needs its citation.
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace micsim {

// `engine`: "analytic" or "simgrid" (the jitter and uplink lines differ); `interval_source`: the 90 %
// interval's line (SimulationResult::interval_source).
std::vector<std::string> result_sources(const PreparedSimulation& p, const std::string& engine, const std::string& interval_source);

}  // namespace micsim
