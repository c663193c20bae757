#pragma once
// Stragglers: besides the small, frequent noise of jitter.hpp, a GPU's host now and then stalls for a
// long moment (a garbage-collection pause, a page-cache flush, a data-loader hiccup, a throttled clock):
// rare events, Poisson in time with `rate_per_s` per GPU, each `stall_s` long. Every synchronisation
// waits for the ranks it joins, so a stall on any of them delays all (Petrini, Kerbyson, Pakin, "The
// Case of the Missing Supercomputer Performance", SC'03; Hoefler, Schneider, Lumsdaine, SC'10: noise as
// detours of a frequency and a length). Where the N ranks a rank meets rarely stall, the step grows
// with N linearly (rate·stall·N): little at 8-64 GPUs, then more with every doubling, the shape of the
// published scaling series at 128-1024 GPUs that a Gaussian maximum (which grows like sqrt(2 ln N))
// does not have (docs/model.md sec 2.6).
namespace micsim {

// Relative growth of a step's compute from other ranks' stalls. The step's compute (of the mean rank)
// is `step_compute_s`, cut by `sync_points` synchronisations among `ranks` ranks into intervals; a
// synchronisation after an interval tau is late by about stall_s·(1 - exp(-rate·ranks·tau)) (at least
// one of them stalled in it). The step also ends with every one of the `world` ranks (the gradient
// sync): at least one stall among all of them during the step. A rank's own stalls are already in the
// compute a single GPU measures, so they are taken off: the result is 0 for one rank.
double straggler_slowdown(double rate_per_s, double stall_s, int ranks, int world, double step_compute_s, double sync_points);

}  // namespace micsim
