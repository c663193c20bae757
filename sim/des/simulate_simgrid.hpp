#pragma once
// Entry point of the SimGrid engine for the rest of micsim (the same result as simulate_analytic).
#include "sim/des/des_engine.hpp"
#include "sim/simulation.hpp"

namespace micsim {

// Runs the SimGrid engine (in a child process). `details`, if given, receives per-node timelines
// (when all_timelines), the number of flows, wall time and peak memory of the simulation.
SimulationResult simulate_simgrid(const PreparedSimulation& p, bool all_timelines = false,
                                  des::DesOutcome* details = nullptr);

}  // namespace micsim
