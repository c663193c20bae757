#pragma once
// Entry point of the SimGrid engine for the rest of micsim (the same result as simulate_analytic).
#include "sim/des/des_engine.hpp"
#include "sim/simulation.hpp"

namespace micsim {

// Runs the SimGrid engine (in a child process): with pipeline stages that differ, once per distinct stage
// (PreparedSimulation::other_stages), keeping the slowest. `details`, if given, receives that run's
// per-node timelines (when opt.keep_all_timelines), flows, wall time and peak memory; `simulated`, the
// stage run.
SimulationResult simulate_simgrid(const PreparedSimulation& p, const des::DesOptions& opt = {},
                                  des::DesOutcome* details = nullptr, const PreparedSimulation** simulated = nullptr);

}  // namespace micsim
