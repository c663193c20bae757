// nccl-tests logs in every layout, published CSVs, `micsim collective` round trips, calibration.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "helpers.hpp"
#include "models/hardware/catalog.hpp"
#include "validation/collective_validation.hpp"

using namespace micsim;
using micsim::test::run_cli;
using micsim::test::temp_file;

static std::string fixture(const char* name) { return std::string(MICSIM_SOURCE_DIR) + "/tests/data/nccl-tests/" + name; }

TEST_CASE("current format: op, ranks and nodes from the header, out-of-place columns in microseconds") {
  auto rows = load_nccl_tests(fixture("new_format_all_gather.txt"));
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].op == CollectiveOp::AllGather);
  CHECK(rows[0].ranks == 4);
  CHECK(rows[0].nodes == 2);
  CHECK(rows[0].bytes == 1048576);
  CHECK(*rows[0].time_s == rel_approx(210.5e-6));
  CHECK(*rows[2].busbw == rel_approx(7.40e9));  // "#wrong" may be N/A
  CHECK(*rows[5].time_s == rel_approx(102604e-6));  // large times print as integers
  CHECK(rows[3].line == 17);
}

TEST_CASE("pre-2.13 format with mpirun prefixes and NCCL INFO noise, op given by the caller") {
  CHECK_THROWS_AS(load_nccl_tests(fixture("old_format_mpirun.txt")), InputError);  // the log never names its op
  auto rows = load_nccl_tests(fixture("old_format_mpirun.txt"), {"all_reduce", 0, 0});
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].ranks == 4);
  CHECK(rows[0].nodes == 2);
  CHECK(*rows[1].time_s == rel_approx(671.4e-6));
  CHECK(*rows[2].busbw == rel_approx(5.52e9));
}

TEST_CASE("2017-2019 format: 'bytes N type op' header and milliseconds") {
  auto rows = load_nccl_tests(fixture("ms_2018.txt"));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].op == CollectiveOp::AllReduce);  // from the command echo
  CHECK(rows[0].ranks == 8);
  CHECK(rows[0].nodes == 1);
  CHECK(*rows[0].time_s == rel_approx(46e-6));
}

TEST_CASE("truncated and malformed logs: exit status 2 with the line number") {
  try {
    load_nccl_tests(fixture("truncated.txt"));
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.where().line == 7);
  }
  auto r = run_cli("validate " + fixture("truncated.txt") + " --instance p5.48xlarge");
  CHECK(r.status == 2);
  CHECK(r.output.find("truncated.txt:7") != std::string::npos);
  auto bad = temp_file("bad.csv", "source,cluster,gpus,nodes,collective,bytes,time_us,algbw_GBps,busbw_GBps\n"
                                  "x,AWS p5.48xlarge,16,2,all_reduce,1024,abc,,\n");
  auto rb = run_cli("validate " + bad);
  CHECK(rb.status == 2);
  CHECK(rb.output.find("bad.csv:2") != std::string::npos);
  CHECK(rb.output.find("time_us") != std::string::npos);
  auto empty = temp_file("empty.txt", "# nothing here\n");
  CHECK(run_cli("validate " + empty + " --instance p5.48xlarge").status == 2);
}

TEST_CASE("published CSV rows: derived values when only busbw was published") {
  auto rows = load_nccl_tests(std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/azure_ai_benchmarking_guide_1node.csv");
  REQUIRE(!rows.empty());
  CHECK_FALSE(rows[0].time_s.has_value());
  CHECK(rows[0].busbw.has_value());
  auto t = rows.back().time_or_derived();
  REQUIRE(t.has_value());
  CHECK(*t == rel_approx(rows.back().bytes * busbw_factor(CollectiveOp::AllReduce, 8) / *rows.back().busbw));
}

TEST_CASE("NCCL_ALGO / NCCL_PROTO a run forced: read off its source or log, and the prediction runs them") {
  // The forms published runs use: an env assignment in a command line, NCCL's own INFO line, the
  // per-operation syntax; lists and exclusions leave NCCL (and micsim) more than one choice.
  auto c = forced_choice("NCCL_ALGO=Ring NCCL_PROTO=LL128 all_reduce_perf -b 1g", CollectiveOp::AllReduce);
  CHECK(c.algorithm == NcclAlgorithm::Ring);
  CHECK(c.protocol == Protocol::LL128);
  c = forced_choice("host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Tree", CollectiveOp::AllReduce);
  CHECK(c.algorithm == NcclAlgorithm::Tree);
  CHECK_FALSE(c.protocol);
  CHECK(forced_choice("NCCL_ALGO=allreduce:nvlstree", CollectiveOp::AllReduce).algorithm == NcclAlgorithm::NVLSTree);
  CHECK_FALSE(forced_choice("NCCL_ALGO=allreduce:nvlstree", CollectiveOp::AllGather).algorithm);
  CHECK_FALSE(forced_choice("NCCL_ALGO=Ring,Tree NCCL_PROTO=^LL128", CollectiveOp::AllReduce).algorithm);
  CHECK_FALSE(forced_choice("NCCL_ALGO=Ring,Tree NCCL_PROTO=^LL128", CollectiveOp::AllReduce).protocol);
  CHECK_FALSE(forced_choice("no environment here", CollectiveOp::AllReduce).algorithm);
  c = forced_choice("(run with NCCL_ALGO=Ring, NCCL_PROTO=Simple.)", CollectiveOp::AllGather);  // a citation's punctuation
  CHECK(c.algorithm == NcclAlgorithm::Ring);
  CHECK(c.protocol == Protocol::Simple);
  CHECK(forced_choice("NCCL_PROTO=allreduce:LL128", CollectiveOp::AllReduce).protocol == Protocol::LL128);
  CHECK_FALSE(forced_choice("NCCL_PROTO=allreduce:LL128", CollectiveOp::ReduceScatter).protocol);
  // The published rows that forced one (nccl-tests#322: Ring + LL128; dstack's A3 High: Ring + Simple).
  const std::string dir = std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/";
  auto big = load_nccl_tests(dir + "github_issue_nccl_tests_322_h100_128_nodes.csv");
  REQUIRE(!big.empty());
  CHECK(big[0].forced.algorithm == NcclAlgorithm::Ring);
  CHECK(big[0].forced.protocol == Protocol::LL128);
  int forced = 0, free = 0;
  for (const auto& r : load_nccl_tests(dir + "dstack_docs_examples.csv")) {
    const bool says = r.source.find("NCCL_PROTO=Simple") != std::string::npos;
    CHECK(r.forced.protocol.has_value() == says);
    if (says) CHECK(r.forced.algorithm == NcclAlgorithm::Ring);
    (says ? forced : free) += 1;
  }
  CHECK(forced >= 10);  // the A3 High tab's TCPX rows
  CHECK(free >= 10);    // the A3 Mega tab's
  // A CSV row may state its setting in the cluster column instead: the 2019 p3dn runs that disabled
  // trees (NCCL_TREE_THRESHOLD=0) say "NCCL_ALGO=ring equivalent" there; a run that says nothing is free.
  const auto dlami = load_nccl_tests(dir + "aws_dlami_efa_tutorial_p3dn_2019.csv");
  const auto gist = load_nccl_tests(dir + "gist_jacobkahn_p3dn_efa_2019.csv");
  REQUIRE(dlami.size() == 28);
  REQUIRE(gist.size() == 39);
  for (const auto& r : dlami) CHECK(r.forced.algorithm == NcclAlgorithm::Ring);
  for (const auto& r : gist) CHECK_FALSE(r.forced.algorithm);
  // A 4-node p5 all_reduce of 64 KiB, free and forced to a ring: the forced row is predicted as the ring.
  NcclTestRow row;
  row.op = CollectiveOp::AllReduce, row.op_known = true, row.ranks = 32, row.nodes = 4, row.bytes = 65536, row.time_s = 1e-4;
  NetworkParams net = NetworkParams::from_instance(HardwareCatalog::builtin().instance("p5.48xlarge"));
  const double free_t = predict_time(net, row);
  // Free, the aws-ofi-nccl tuner puts it on a tree; the forced run must not get that choice.
  CHECK(CollectiveModel(net).estimate(row.op, row.bytes, GroupLayout::make(32, 4)).algorithm == NcclAlgorithm::Tree);
  row.forced.algorithm = NcclAlgorithm::Ring;
  const double ring_t = predict_time(net, row);
  const auto ring = CollectiveModel(net).estimate(row.op, row.bytes, GroupLayout::make(32, 4), row.forced);
  CHECK(ring.algorithm == NcclAlgorithm::Ring);
  CHECK(ring_t == rel_approx(ring.time_s));
  CHECK(ring_t != rel_approx(free_t));
}

TEST_CASE("micsim collective prints nccl-tests' layout that the parser reads back") {
  std::string out = micsim::test::temp_path("coll.txt");
  auto r = run_cli("collective --instance p4d.24xlarge --nodes 4 --op all_gather -b 8 -e 8G -f 2 > " + out);
  REQUIRE(r.status == 0);
  auto rows = load_nccl_tests(out);
  CHECK(rows.size() == 31);  // 8 B .. 8 GiB, factor 2... all_gather rounds the small sizes up to 4 B x 32 ranks
  CHECK(rows[0].op == CollectiveOp::AllGather);
  CHECK(rows[0].ranks == 32);
  CHECK(rows[0].nodes == 4);
  // busbw = algbw x (n-1)/n, as nccl-tests prints it.
  const auto& last = rows.back();
  CHECK(*last.busbw == rel_approx(*last.algbw * 31.0 / 32.0).epsilon(0.01));
  auto j = run_cli("collective --instance p4de.24xlarge --nodes 2 --op all_reduce -b 64M -e 64M --json -");
  CHECK(j.status == 0);
  auto js = nlohmann::json::parse(j.output);
  CHECK(js["rows"][0]["algorithm"] == "tree");
  // Beside NCCL's pick, what a tuner that knew the measured network would run: never slower.
  REQUIRE(js["rows"][0].contains("fastest"));
  CHECK(js["rows"][0]["fastest"]["time_us"].get<double>() <= js["rows"][0]["time_us"].get<double>() * (1 + 1e-12));
  // On H100 InfiniBand at 4 nodes, 256 MiB all_gather: NCCL's tables keep ring LL128 (lower latency), but on the
  // measured network NVLink's mid-size ramp makes the transfer NVLink-bound, where LL128's 120/128 payload costs
  // more than its latency saves: ring Simple would be faster. The note under the table says so.
  auto h = run_cli("collective --instance dgx-h100 --nodes 4 --op all_gather -b 256M -e 256M");
  CHECK(h.output.find("slower than the fastest candidate on this network at 1 of 1 sizes") != std::string::npos);
  CHECK(h.output.find("ring/LL128") != std::string::npos);
  CHECK(h.output.find("ring/Simple") != std::string::npos);
  auto forced = nlohmann::json::parse(run_cli("collective --instance p4de.24xlarge --nodes 2 --op all_reduce -b 64M -e 64M --algo ring --json -").output);
  CHECK(forced["rows"][0]["algorithm"] == "ring");
  CHECK_FALSE(forced["rows"][0].contains("fastest"));
  CHECK(forced["rows"][0]["time_us"].get<double>() > js["rows"][0]["time_us"].get<double>());
  CHECK(run_cli("collective --instance p4d.24xlarge --nodes 0").status == 2);
  CHECK(run_cli("collective --instance p4d.24xlarge --op all_gatherx").status == 2);
  CHECK(run_cli("collective --instance p4d.24xlarge -b 8X").status == 2);
}

TEST_CASE("calibrate recovers the network terms that generated a log") {
  // Generate nccl-tests output with known terms, fit them back from the catalog defaults.
  std::string truth = temp_file("truth.yaml", "instance: p4d.24xlarge\nnetwork: {inter_latency_us: 40, inter_efficiency: 0.6, inter_efficiency_at_scale: 0.45}\n");
  std::string logs;
  for (int nodes : {2, 4, 8}) {
    std::string out = micsim::test::temp_path("ag" + std::to_string(nodes) + ".txt");
    REQUIRE(run_cli("collective --instance p4d.24xlarge --nodes " + std::to_string(nodes) +
                    " --op all_gather -b 1K -e 4G -f 4 --calibration " + truth + " > " + out).status == 0);
    logs += " --nccl-tests " + out;
  }
  std::string cal = micsim::test::temp_path("fit.yaml");
  auto r = run_cli("calibrate" + logs + " --instance p4d.24xlarge --out " + cal);
  REQUIRE(r.status == 0);
  Calibration c = load_calibration(cal);
  REQUIRE(c.inter_latency_s.has_value());
  CHECK(*c.inter_latency_s * 1e6 == rel_approx(40).epsilon(0.03));
  CHECK(*c.inter_efficiency == rel_approx(0.6).epsilon(0.03));
  CHECK(*c.inter_efficiency_at_scale == rel_approx(0.45).epsilon(0.03));
  // The file is loadable from a scenario.
  std::string sc = temp_file("cal-scenario.yaml",
                             "cluster: {instance: p4d.24xlarge, nodes: 4}\nmodel: {preset: bert-10b}\n"
                             "training: {seq_len: 512, micro_batch: 8, global_batch: 256}\nstrategy: {kind: zero3}\n"
                             "calibration: " + cal + "\n");
  auto sim = run_cli("simulate " + sc + " --json - -q");
  CHECK(sim.status == 0);
  CHECK(sim.output.find("calibration " + cal) != std::string::npos);
}

TEST_CASE("shipped defaults: median error on the published rows stays within 10 %") {
  std::vector<NcclTestRow> rows;
  for (const char* f : {"aws_awsome_distributed_training_nccl_tests_readme.csv", "aws_awsome_distributed_training_aws_batch_p5_1node.csv",
                        "azure_ai_benchmarking_guide_1node.csv", "gcp_a3mega_2node_allreduce.csv", "gist_jacobkahn_p3dn_efa_2019.csv",
                        "dstack_docs_examples.csv", "microsoft_mscclpp_ndmv4.csv"}) {
    auto r = load_nccl_tests(std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/" + f);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  auto cmp = compare_collectives(rows, ClusterMap::builtin());
  std::vector<double> err;
  for (const auto& c : cmp) err.push_back(c.error());
  auto s = summarize_errors(err);
  CHECK(s.count > 200);
  CHECK(s.median_abs < 0.10);
}

TEST_CASE("sources' disagreement: each row against the mean of the other files at the same point") {
  auto row = [](const char* file, int nodes, double bytes, double published) {
    HeldOutComparison h;
    h.fabric = "infiniband-ndr";
    h.c.row.file = file, h.c.row.nodes = nodes, h.c.row.op_name = "all_reduce", h.c.row.bytes = bytes;
    h.c.metric = "busbw", h.c.published = published;
    return h;
  };
  const std::vector<HeldOutComparison> rows = {row("a.csv", 4, 1 << 30, 100), row("b.csv", 4, 1 << 30, 120),
                                               row("c.csv", 4, 1 << 30, 80),  row("a.csv", 8, 1 << 30, 90),
                                               row("b.csv", 4, 1 << 20, 50)};
  const std::vector<double> d = between_source_deviation(rows);
  REQUIRE(d.size() == rows.size());
  CHECK(d[0] == rel_approx(100.0 / 100.0 - 1));  // others: (120 + 80) / 2
  CHECK(d[1] == rel_approx(120.0 / 90.0 - 1));   // others: (100 + 80) / 2
  CHECK(d[2] == rel_approx(80.0 / 110.0 - 1));
  CHECK(std::isnan(d[3]));  // 8 nodes: one file only
  CHECK(std::isnan(d[4]));  // another size: one file only
}

TEST_CASE("sources' disagreement compares one configuration: the same ranks and the same forced algorithm") {
  auto row = [](const char* file, int ranks, bool ring_forced, double published) {
    HeldOutComparison h;
    h.fabric = "efa-2019";
    h.c.row.file = file, h.c.row.nodes = 2, h.c.row.ranks = ranks, h.c.row.op_name = "all_reduce", h.c.row.bytes = 8;
    if (ring_forced) h.c.row.forced.algorithm = NcclAlgorithm::Ring;
    h.c.metric = "time", h.c.published = published;
    return h;
  };
  // p3dn at 8 B: two clusters at 2 x 8 GPUs (163 and 152 us), one at 2 x 1 GPU (52 us), one 2 x 8 run
  // with the ring forced (140 us). Only the first two measured the same thing.
  const std::vector<HeldOutComparison> rows = {row("gist.csv", 16, false, 163e-6), row("eks.csv", 16, false, 152e-6),
                                               row("eks.csv", 2, false, 52e-6), row("dlami.csv", 16, true, 140e-6)};
  const std::vector<double> d = between_source_deviation(rows);
  REQUIRE(d.size() == rows.size());
  CHECK(d[0] == rel_approx(163.0 / 152.0 - 1));
  CHECK(d[1] == rel_approx(152.0 / 163.0 - 1));
  CHECK(std::isnan(d[2]));  // 2 x 1 GPU: no other file ran it
  CHECK(std::isnan(d[3]));  // ring forced: no other file forced it
}

TEST_CASE("a run that set an NCCL variable micsim has no term for is neither scored nor fitted") {
  const ClusterMap& map = ClusterMap::builtin();
  // nccl-tests#309: the same 8-node cluster by default, and with more CTAs and queue pairs.
  const std::string file = std::string(MICSIM_SOURCE_DIR) +
                           "/validation/data/nccl-tests/github_issue_nccl_tests_309_h100_ib_ndr_gjaion_4_8_nodes.csv";
  const auto rows = load_nccl_tests(file);
  size_t mapped = 0, tuned = 0;
  for (const auto& r : rows) {
    const bool set = r.cluster.find("NCCL_MIN_CTAS=24") != std::string::npos;
    tuned += set;
    if (map.instance_for(r)) {
      ++mapped;
      CHECK_FALSE(set);
    }
  }
  CHECK(tuned == 14);
  CHECK(mapped == rows.size() - tuned);
  // The variable may sit in the cited command instead of the cluster's name; NCCL_ALGO is modelled.
  NcclTestRow r;
  r.cluster = "H100 SXM cluster of user gj-aion (8xH100 80GB HBM3; 400Gbps InfiniBand)";
  r.source = "all_reduce_perf -b 8 -e 8G (NCCL_ALGO=Ring)";
  CHECK(map.instance_for(r) == std::string("dgx-h100"));
  r.source = "NCCL_IB_QPS_PER_CONNECTION=4 all_reduce_perf -b 8 -e 8G";
  CHECK_FALSE(map.instance_for(r));
  CHECK(map.unmodelled_setting(r.source) == "NCCL_IB_QPS_PER_CONNECTION");
  // Nothing it leaves out reaches compare_collectives.
  for (const auto& c : compare_collectives(rows, map)) CHECK(c.row.cluster.find("NCCL_MIN_CTAS") == std::string::npos);
}

TEST_CASE("a network crossing's fixed cost and a hop faster than NCCL's table: charged as stated, fitted back from two node counts") {
  NetworkParams net = NetworkParams::from_instance(HardwareCatalog::builtin().instance("dgx-h100"));
  net.inter_latency_s = 0, net.inter_fixed_latency_s = 0;
  NetworkParams crossing = net;
  crossing.inter_fixed_latency_s = 9e-6;
  for (int nodes : {1, 2, 4}) {
    const GroupLayout g = GroupLayout::make(8 * nodes, nodes);
    const double before = CollectiveModel(net).estimate(CollectiveOp::AllReduce, 8, g, {NcclAlgorithm::Tree, Protocol::LL}).time_s;
    const double after = CollectiveModel(crossing).estimate(CollectiveOp::AllReduce, 8, g, {NcclAlgorithm::Tree, Protocol::LL}).time_s;
    CHECK(after - before == rel_approx(nodes > 1 ? 9e-6 : 0.0).epsilon(1e-6));  // once, and only across nodes
  }
  // NCCL's tree LL hop is hwLat[NET] 5 us + latencyInter: a negative latencyInter makes it shorter.
  NetworkParams quick = net;
  quick.inter_latency_s = -2e-6;
  const auto tree = [](const NetworkParams& n, int nodes) {
    return CollectiveModel(n).estimate(CollectiveOp::AllReduce, 8, GroupLayout::make(8 * nodes, nodes), {NcclAlgorithm::Tree, Protocol::LL}).time_s;
  };
  CHECK((tree(quick, 4) - tree(quick, 2)) == rel_approx(2 * 3e-6).epsilon(1e-4));  // one level more: 2 hops of 3 us
  CHECK((tree(net, 4) - tree(net, 2)) == rel_approx(2 * 5e-6).epsilon(1e-4));
  // Logs made with both terms (2 and 4 nodes) give both back; with one node count only the hop is fitted.
  std::string truth = temp_file("crossing.yaml", "instance: dgx-h100\nnetwork: {inter_latency_us: -1.5, inter_fixed_latency_us: 9}\n");
  std::string logs;
  for (int nodes : {2, 4}) {
    std::string out = micsim::test::temp_path("ar-crossing" + std::to_string(nodes) + ".txt");
    REQUIRE(run_cli("collective --instance dgx-h100 --nodes " + std::to_string(nodes) +
                    " --op all_reduce -b 8 -e 64K -f 4 --calibration " + truth + " > " + out).status == 0);
    logs += " --nccl-tests " + out;
  }
  std::string cal = micsim::test::temp_path("crossing-fit.yaml");
  REQUIRE(run_cli("calibrate" + logs + " --include-two-node-allreduce --instance dgx-h100 --out " + cal).status == 0);
  Calibration c = load_calibration(cal);
  REQUIRE(c.inter_latency_s.has_value());
  REQUIRE(c.inter_fixed_latency_s.has_value());
  CHECK(*c.inter_latency_s * 1e6 == rel_approx(-1.5).epsilon(0.05));
  CHECK(*c.inter_fixed_latency_s * 1e6 == rel_approx(9).epsilon(0.05));
  // A calibration file may carry a negative hop latency, down to the floor; below it is an error.
  CHECK(run_cli("collective --instance dgx-h100 --nodes 2 --op all_reduce -b 8 -e 8 --calibration " +
                temp_file("floor.yaml", "network: {inter_latency_us: -3}\n")).status == 2);
}

TEST_CASE("one GPU's host-staged path and the NVLink hop latency: charged where they bind, fitted back from two GPUs-per-node counts") {
  const InstanceSpec& p3dn = HardwareCatalog::builtin().instance("p3dn.24xlarge");
  NetworkParams net = NetworkParams::from_instance(p3dn);
  REQUIRE(net.gpu_path_bytes_per_s == rel_approx(2.6e9));
  NetworkParams unlimited = net;
  unlimited.gpu_path_bytes_per_s = 0;
  const auto time = [](const NetworkParams& n, int ranks, int nodes, int concurrent = 1) {
    return CollectiveModel(n).estimate(CollectiveOp::AllReduce, double(1 << 30), GroupLayout::make(ranks, nodes, concurrent),
                                       {NcclAlgorithm::Ring, std::nullopt}).time_s;
  };
  // The catalog's value against the rows it was read off (in sample: the file's 2 x 1 GPU run, ring forced,
  // aws-samples/eks-efa-examples@032dc78): every published time from 64 MiB up within 3 %; without the path the
  // node's NIC would give it the 8-GPU rate, 7.5 GB/s, and those rows run 2.6-2.9x faster than published.
  int compared = 0;
  for (const auto& r : load_nccl_tests(std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/aws_samples_eks_efa_examples_p3dn.csv")) {
    if (r.ranks != 2 || r.bytes < 64.0 * (1 << 20)) continue;
    const auto predicted = [&](const NetworkParams& n) {
      return CollectiveModel(n).estimate(CollectiveOp::AllReduce, r.bytes, GroupLayout::make(2, 2), r.forced).time_s;
    };
    CHECK(predicted(net) / *r.time_or_derived() == rel_approx(1.0).epsilon(0.03));
    CHECK(predicted(unlimited) / *r.time_or_derived() < 0.4);
    ++compared;
  }
  CHECK(compared == 6);
  // A calibration may lift the catalog's path: 0 means no limit, as on the fabric.
  NetworkParams lifted = net;
  load_calibration(temp_file("p3dn-nopath.yaml", "instance: p3dn.24xlarge\nnetwork: {gpu_path_gbytes_per_s: 0}\n")).apply(lifted);
  CHECK(time(lifted, 2, 2) == time(unlimited, 2, 2));
  // With eight GPUs per node the NIC binds first, and so it does for MiCS's eight concurrent one-GPU-per-node groups.
  CHECK(time(net, 16, 2) == time(unlimited, 16, 2));
  CHECK(time(net, 2, 2, 8) == time(unlimited, 2, 2, 8));
  // Logs at one and at eight GPUs per node, made with known terms, give them back; from one count neither is fitted.
  std::string truth = temp_file("p3dn-truth.yaml", "instance: p3dn.24xlarge\n"
                                "network: {intra_latency_scale: 3, inter_latency_us: 20, gpu_path_gbytes_per_s: 2.2}\n");
  std::string one_per_node = micsim::test::temp_path("p3dn-1gpu.txt"), eight_per_node = micsim::test::temp_path("p3dn-8gpu.txt");
  REQUIRE(run_cli("collective --instance p3dn.24xlarge --nodes 2 --gpus-per-node 1 --algo ring --op all_reduce -b 8 -e 1G -f 4 "
                  "--calibration " + truth + " > " + one_per_node).status == 0);
  REQUIRE(run_cli("collective --instance p3dn.24xlarge --nodes 2 --op all_reduce -b 8 -e 1G -f 4 --calibration " + truth + " > " +
                  eight_per_node).status == 0);
  std::string cal = micsim::test::temp_path("p3dn-fit.yaml");
  REQUIRE(run_cli("calibrate --nccl-tests " + one_per_node + " --nccl-tests " + eight_per_node +
                  " --include-two-node-allreduce --instance p3dn.24xlarge --out " + cal).status == 0);
  Calibration c = load_calibration(cal);
  REQUIRE(c.intra_latency_scale.has_value());
  REQUIRE(c.gpu_path_bytes_per_s.has_value());
  REQUIRE(c.inter_latency_s.has_value());
  CHECK(*c.intra_latency_scale == rel_approx(3).epsilon(0.05));
  CHECK(*c.inter_latency_s * 1e6 == rel_approx(20).epsilon(0.05));
  CHECK(*c.gpu_path_bytes_per_s / 1e9 == rel_approx(2.2).epsilon(0.05));
  std::string eight_only = micsim::test::temp_path("p3dn-fit8.yaml");
  REQUIRE(run_cli("calibrate --nccl-tests " + eight_per_node + " --include-two-node-allreduce --instance p3dn.24xlarge --out " +
                  eight_only).status == 0);
  Calibration e = load_calibration(eight_only);
  CHECK_FALSE(e.intra_latency_scale.has_value());
  CHECK_FALSE(e.gpu_path_bytes_per_s.has_value());
}

TEST_CASE("validate --leave-one-source-out: the multi-node rows of each source file, summed, are the held-out rows") {
  const std::string dir = std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/";
  auto r = run_cli("validate --leave-one-source-out " + dir + "aws_awsome_distributed_training_nccl_tests_readme.csv " + dir +
                   "crazyguitar_aws_gpu_communication_benchmark_p5_efa.csv --json -");
  REQUIRE(r.status == 0);
  const auto js = nlohmann::json::parse(r.output);
  std::map<std::string, std::vector<double>> multi;  // file -> errors of its multi-node held-out rows
  for (const auto& row : js.at("held_out_rows"))
    if (row.at("nodes").get<int>() >= 2) multi[row.at("file").get<std::string>()].push_back(row.at("error").get<double>());
  REQUIRE(js.at("held_out_by_source").size() == multi.size());
  REQUIRE(multi.size() == 2);
  for (const auto& s : js.at("held_out_by_source")) {
    const auto& errors = multi.at(s.at("file").get<std::string>());
    CHECK(s.at("rows").get<size_t>() == errors.size());
    CHECK(s.at("median_abs_error").get<double>() == rel_approx(summarize_errors(errors).median_abs));
    CHECK(s.at("mean_error").get<double>() == rel_approx(summarize_errors(errors).mean_signed));
    CHECK(s.at("fabric") == "efa-v2");
  }
  // The text names each file with its node counts.
  auto text = run_cli("validate --leave-one-source-out " + dir + "aws_awsome_distributed_training_nccl_tests_readme.csv " + dir +
                      "crazyguitar_aws_gpu_communication_benchmark_p5_efa.csv");
  CHECK(text.output.find("crazyguitar_aws_gpu_communication_benchmark_p5_efa.csv") != std::string::npos);
  CHECK(text.output.find("2,4,8,16,32") != std::string::npos);
}

TEST_CASE("a log's NCCL settings, read off its NCCL INFO lines: validate warns, calibrate records them") {
  const std::string fixture_text = micsim::test::read_text(std::string(MICSIM_SOURCE_DIR) + "/tests/data/nccl-tests/new_format_all_gather.txt");
  REQUIRE(!fixture_text.empty());
  const std::string log = temp_file("tuned.txt", "node-a:1:1 [0] NCCL INFO NCCL_MIN_CTAS set by environment to 24\n"
                                                 "node-a:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n" + fixture_text);
  const auto rows = load_nccl_tests(log);
  REQUIRE(!rows.empty());
  CHECK(nccl_setting(rows.front().environment, "NCCL_MIN_CTAS") == "24");
  CHECK(nccl_setting(rows.front().environment, "NCCL_PROTO") == "Simple");
  CHECK(nccl_setting(rows.front().environment, "NCCL_ALGO").empty());
  CHECK(rows.front().forced.protocol == Protocol::Simple);  // modelled: the prediction runs it
  CHECK_FALSE(ClusterMap::builtin().instance_for(rows.front()));
  // validate --instance still predicts it, and says what it cannot model; without the setting, no warning.
  auto v = run_cli("validate " + log + " --instance p4d.24xlarge");
  CHECK(v.status == 0);
  CHECK(v.output.find("the run set NCCL_MIN_CTAS, which micsim has no term for") != std::string::npos);
  CHECK(v.output.find("all_gather") != std::string::npos);
  const std::string plain = std::string(MICSIM_SOURCE_DIR) + "/tests/data/nccl-tests/new_format_all_gather.txt";
  CHECK(run_cli("validate " + plain + " --instance p4d.24xlarge").output.find("warning") == std::string::npos);
  // calibrate fits it (the terms then include the setting) and its file says so.
  const std::string cal = micsim::test::temp_path("tuned-cal.yaml");
  REQUIRE(run_cli("calibrate --nccl-tests " + log + " --instance p4d.24xlarge --out " + cal).status == 0);
  CHECK(micsim::test::read_text(cal).find("runs set NCCL_MIN_CTAS: the terms hold for that setting") != std::string::npos);
}

namespace {
std::vector<NcclTestRow> published_rows(const std::vector<std::string>& files, const std::string& instance) {
  std::vector<NcclTestRow> rows;
  for (const auto& f : files)
    for (const auto& r : load_nccl_tests(std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/" + f))
      if (ClusterMap::builtin().instance_for(r) == instance) rows.push_back(r);
  return rows;
}
}  // namespace

TEST_CASE("a fit from priors owes nothing to the catalog's values of those terms, and a term its rows cannot move is not fitted") {
  // Held-out scores start from generic priors for the catalog terms fitted on the scored file
  // (validation/data/nccl-tests-clusters.yaml fitted_on): the same rows must then give the same terms
  // whatever the catalog says of them.
  const auto rows = published_rows({"voltagepark_vpbenchmarking_h100_ib_4_nodes.csv", "dstack_docs_examples.csv"}, "dgx-h100");
  REQUIRE(rows.size() > 50);
  const InstanceSpec cat = HardwareCatalog::builtin().instance("dgx-h100");
  InstanceSpec odd = cat;  // every fittable network term far from the catalog's
  odd.network.fabric.latency_s = 40e-6;
  odd.network.fabric.fixed_latency_s = 0;
  odd.network.fabric.bandwidth_efficiency = 0.5;
  odd.network.fabric.bandwidth_efficiency_at_scale = 0.4;
  odd.network.fabric.ramp_min = 0.05;
  odd.network.fabric.ramp_half_bytes = 64e6;
  odd.network.fabric.ll128_efficiency = 0.3;
  FitOptions opt;
  opt.include_two_node_allreduce = true;
  opt.priors = {"inter_latency_us", "inter_fixed_latency_us", "inter_efficiency", "inter_efficiency_at_scale", "inter_ramp",
                "inter_ll128_efficiency", "inter_tree_efficiency"};
  const NetworkFit a = fit_network(cat, rows, opt), b = fit_network(odd, rows, opt);
  REQUIRE(a.fitted == b.fitted);
  REQUIRE(a.calibration.inter_efficiency.has_value());
  CHECK(*a.calibration.inter_efficiency == rel_approx(*b.calibration.inter_efficiency).epsilon(1e-9));
  CHECK(*a.calibration.inter_latency_s == rel_approx(*b.calibration.inter_latency_s).epsilon(1e-9));
  CHECK(*a.calibration.inter_ramp_half_bytes == rel_approx(*b.calibration.inter_ramp_half_bytes).epsilon(1e-9));
  CHECK(*a.calibration.inter_ll128_efficiency == rel_approx(*b.calibration.inter_ll128_efficiency).epsilon(1e-9));
  // Without priors the fit also starts from the catalog's values, but its three catalog-free starts reach
  // the optimum for the terms these rows determine (to within 1 %: the cost is flat enough near it that
  // different starts stop a few per mille apart); what the priors change is the terms they do not
  // (the tree's rate: no row here runs a tree across >= 3 nodes): those would keep the catalog's value.
  FitOptions plain;
  plain.include_two_node_allreduce = true;
  const NetworkFit c = fit_network(odd, rows, plain);
  CHECK(c.at_prior.empty());
  CHECK(*c.calibration.inter_efficiency == rel_approx(*a.calibration.inter_efficiency).epsilon(0.01));
  CHECK_FALSE(c.calibration.inter_tree_efficiency.has_value());
  REQUIRE(a.calibration.inter_tree_efficiency.has_value());
  CHECK(*a.calibration.inter_tree_efficiency == rel_approx(1.0));
  CHECK(std::find(a.at_prior.begin(), a.at_prior.end(), "inter_tree_efficiency") != a.at_prior.end());

  // p5's 1- and 2-node rows: 2-node all_reduce runs NVLS-tree, bound by NVLink, so the 2-node network
  // efficiency is in the fit's list but no row moves it. It is not reported as fitted and, started from
  // priors, stays at the prior and is named as such.
  const auto p5 = published_rows({"aws_awsome_distributed_training_nccl_tests_readme.csv", "aws_awsome_distributed_training_aws_batch_p5_1node.csv"},
                                 "p5.48xlarge");
  FitOptions held;
  held.include_two_node_allreduce = true;
  held.priors = ClusterMap::builtin().terms_fitted_on("efa-v2", "crazyguitar_aws_gpu_communication_benchmark_p5_efa.csv");
  REQUIRE(held.priors.count("inter_efficiency"));
  const NetworkFit d = fit_network(HardwareCatalog::builtin().instance("p5.48xlarge"), p5, held);
  CHECK(std::find(d.fitted.begin(), d.fitted.end(), "inter_efficiency") == d.fitted.end());
  CHECK(std::find(d.at_prior.begin(), d.at_prior.end(), "inter_efficiency") != d.at_prior.end());
  REQUIRE(d.calibration.inter_efficiency.has_value());
  CHECK(*d.calibration.inter_efficiency == rel_approx(0.9));
  // The ramp, unmoved too, is at its prior: none (not the mid-size guess the fit started it from).
  CHECK(std::find(d.at_prior.begin(), d.at_prior.end(), "inter_ramp") != d.at_prior.end());
  REQUIRE(d.calibration.inter_ramp_min.has_value());
  CHECK(*d.calibration.inter_ramp_min == rel_approx(1.0));
  CHECK(std::find(d.fitted.begin(), d.fitted.end(), "inter_latency_us") != d.fitted.end());  // small 2-node rows move it
  CHECK(std::find(d.unmoved.begin(), d.unmoved.end(), "inter_efficiency") != d.unmoved.end());
  // calibrate says which terms its rows could not move, and does not write them.
  const std::string dir = std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/";
  const std::string out = micsim::test::temp_path("p5-1-2-nodes.yaml");
  auto r = run_cli("calibrate --instance p5.48xlarge --include-two-node-allreduce --nccl-tests " + dir +
                   "aws_awsome_distributed_training_nccl_tests_readme.csv " + dir + "aws_awsome_distributed_training_aws_batch_p5_1node.csv --out " + out);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("no row moves inter_efficiency") != std::string::npos);
  CHECK_FALSE(load_calibration(out).inter_efficiency.has_value());
}

TEST_CASE("the fitted_on list of validation data: a file's terms by fabric, checked on load") {
  const ClusterMap& m = ClusterMap::builtin();
  // The catalog's NDR terms were fitted on all four NDR files, efa-v2's 2-node terms on the p5 tables.
  CHECK(m.terms_fitted_on("infiniband-ndr", "/x/voltagepark_vpbenchmarking_h100_ib_4_nodes.csv").count("inter_efficiency_at_scale"));
  CHECK(m.terms_fitted_on("efa-v2", "crazyguitar_aws_gpu_communication_benchmark_p5_efa.csv").count("inter_ramp"));
  CHECK(m.terms_fitted_on("efa-v2", "crazyguitar_aws_gpu_communication_benchmark_p5_efa.csv").count("inter_efficiency_at_scale") == 0);
  CHECK(m.terms_fitted_on("efa-v2", "aws_awsome_distributed_training_aws_batch_p5_1node.csv").count("intra_ramp"));  // NVLink terms
  CHECK(m.terms_fitted_on("infiniband-ndr", "unknown.csv").empty());
  // Every fabric whose catalog terms `micsim calibrate` fitted names the files, and every file named exists:
  // a fabric refitted without its fitted_on entry would let held-out scores use terms fitted on themselves.
  const std::string data = std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/";
  for (const auto& name : HardwareCatalog::builtin().fabric_names()) {
    const FabricSpec& f = *HardwareCatalog::builtin().find_fabric(name);
    INFO("fabric " << name << ": " << f.source);
    if (f.source.find("calibrate") != std::string::npos) CHECK_FALSE(m.files_fitted_on(name).empty());
    for (const auto& file : m.files_fitted_on(name)) CHECK(std::filesystem::is_regular_file(data + file));
  }
  REQUIRE_FALSE(m.files_fitted_on("intra").empty());
  for (const auto& file : m.files_fitted_on("intra")) CHECK(std::filesystem::is_regular_file(data + file));
  // Bad input: an unknown fabric or term is an error that names it.
  auto load_bad = [](const std::string& body) {
    try {
      ClusterMap::load(temp_file("clusters.yaml", "clusters: []\nfitted_on:\n" + body));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(load_bad("  efa-v9: {a.csv: [inter_efficiency]}\n").find("efa-v9") != std::string::npos);
  CHECK(load_bad("  efa-v2: {a.csv: [inter_speed]}\n").find("inter_speed") != std::string::npos);
}
