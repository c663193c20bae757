#pragma once
// Reads nccl-tests results: the text that all_reduce_perf & co. print (every layout in
// docs/reference/nccl-and-compute.md §1: >= v2.13 with root/#wrong, older with error and no
// root, 2017-2019 with time in ms, mpirun/srun prefixes) and the published CSV rows
// (source,cluster,gpus,nodes,collective,bytes,time_us,algbw_GBps,busbw_GBps).
#include <optional>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"

namespace micsim {

struct NcclTestRow {
  CollectiveOp op = CollectiveOp::AllReduce;
  std::string op_name;            // as published (all_reduce, alltoall, sendrecv, ...)
  bool op_known = false;          // op is one micsim models
  int ranks = 0, nodes = 0;
  double bytes = 0;               // nccl-tests `size`
  std::optional<double> time_s;   // out-of-place time
  std::optional<double> busbw;    // bytes/s
  std::optional<double> algbw;    // bytes/s
  std::string cluster;            // CSV only
  std::string source;             // CSV: citation; log: file name
  // Log: its "NCCL INFO NAME set by environment to VALUE" lines (read them with nccl_setting); a CSV row
  // states its settings in `source` or `cluster`.
  std::string environment;
  // NCCL_ALGO / NCCL_PROTO the run forced (read off the CSV's source text or the log's command and
  // "set by environment" lines): the prediction runs the same algorithm and protocol.
  CollectiveChoice forced;
  // The run had in-network reduction: it set NCCL_COLLNET_ENABLE=1 on a SHARP fabric, both as its text
  // states (collnet_enabled); the prediction then lets NCCL pick CollNet (NetworkParams::collnet).
  bool collnet = false;
  std::string file;
  int line = 0;
  // Time, or derived from busbw/algbw when only those were published.
  std::optional<double> time_or_derived() const;
  std::optional<double> busbw_or_derived() const;
};

struct NcclTestsOptions {
  std::string op;        // force the collective when a log does not say it ("" = detect)
  int ranks = 0;         // force when the log has no "Rank ... on HOST" lines
  int nodes = 0;
};

// The algorithm and protocol a run forced through NCCL_ALGO / NCCL_PROTO, as written in `text` (a
// command line, "NCCL_ALGO=Ring", or NCCL's "NCCL_ALGO set by environment to Ring"), for operation `op`.
// Names match case- and underscore-blind ("NVLSTree" = nvls_tree); "allreduce:ring" applies to one
// operation. Only a single choice counts: lists ("Ring,Tree"), exclusions ("^LL128") and values of other
// operations ("allgather:ring" for an all_reduce) leave the choice free, as they leave NCCL more than one.
CollectiveChoice forced_choice(const std::string& text, CollectiveOp op);
// The value `text` gives the NCCL variable `name` ("NAME=VALUE" in a cited command, or a log's "NAME set
// by environment to VALUE"), without the punctuation a citation puts after it ("NCCL_ALGO=Ring, ..."; a
// list keeps its inner commas); "" when the text does not set it.
std::string nccl_setting(const std::string& text, const std::string& name);
// Whether `text` (a row's citation, cluster and log environment together) enables CollNet: it sets
// NCCL_COLLNET_ENABLE=1 and names SHARP, the in-network reduction the CollNet plugin drives. The variable
// alone does nothing without the plugin and SHARP-capable switches.
bool collnet_enabled(const std::string& text);

// A text log or a CSV file (decided by content). Errors are InputError with file:line.
std::vector<NcclTestRow> load_nccl_tests(const std::string& path, const NcclTestsOptions& opt = {});
std::vector<NcclTestRow> parse_nccl_tests_log(const std::string& text, const std::string& file,
                                              const NcclTestsOptions& opt = {});
std::vector<NcclTestRow> parse_nccl_tests_csv(const std::string& text, const std::string& file);

// Formats rows in nccl-tests' own column layout (out-of-place block), for `micsim collective`.
std::string nccl_tests_header();
std::string nccl_tests_line(CollectiveOp op, double bytes, int elem_size, double time_s, double busbw_factor);

}  // namespace micsim
