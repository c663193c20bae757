#pragma once
// The resume file of `micsim plan --checkpoint FILE`: the SimGrid refinements a run has finished,
// appended one line each as they finish, so that a killed plan resumes without redoing them.
//
// What is kept, and why: a SimGrid refinement costs seconds to minutes; an analytic evaluation costs
// well under a millisecond and is a pure function of the inputs, so it is recomputed on resume
// (storing it would cost about as much as computing it). The ranking never depends on what the file
// holds: the top K are chosen by the analytic engine, and only then are their refinements taken
// from the file or run.
//
// Format (text, append-only):
//   micsim-plan-checkpoint 2 <search key>
//   <checksum> {"index": I, "simgrid": {...result...}}
// The search key hashes the micsim version, the scenario text, the overrides and every candidate;
// a file for another search is started afresh. Each record carries a 64-bit FNV-1a checksum of its
// JSON; a damaged record is an error at file:line, except a last line cut short by a kill, which is
// dropped. Every value is range-checked on load.
#include <cstdint>
#include <map>
#include <string>

#include "sim/simulation.hpp"

namespace micsim {

uint64_t fnv1a64(const std::string& s);

class PlanCheckpoint {
 public:
  PlanCheckpoint(std::string path, std::string key) : path_(std::move(path)), key_(std::move(key)) {}
  ~PlanCheckpoint();
  PlanCheckpoint(const PlanCheckpoint&) = delete;
  PlanCheckpoint& operator=(const PlanCheckpoint&) = delete;

  bool enabled() const { return !path_.empty(); }
  // Refinements saved by an earlier run of the same search (candidate index -> SimGrid result), and
  // the file made ready for appending. `candidates` bounds the indices.
  std::map<size_t, SimulationResult> load(size_t candidates);
  // Appends one refinement (a single write, then fsync).
  void append(size_t index, const SimulationResult& simgrid);

 private:
  std::string path_, key_;
  int fd_ = -1;
  void start_afresh();
};

// Throws InputError (at `where`) unless every number of a stored result is finite and in range.
void check_result_ranges(const SimulationResult& r, const SourceLocation& where);

}  // namespace micsim
