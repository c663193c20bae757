// Where a fabric's network terms stop being measured (catalog `measured_nodes`): the ranges agree with the
// published rows micsim maps to each fabric, and simulate / collective warn beyond them.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "models/calibration/calibration.hpp"
#include "models/hardware/catalog.hpp"
#include "validation/collective_validation.hpp"
#include "validation/nccl_tests.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::scenario;

TEST_CASE("measured_nodes: every fabric's range is the node counts of the multi-node published rows mapped to it, or of a text its source cites") {
  const ClusterMap map = ClusterMap::builtin();
  const HardwareCatalog& cat = HardwareCatalog::builtin();
  std::map<std::string, NodeRange> seen;  // fabric -> node counts of its mapped multi-node rows
  for (const auto& e : std::filesystem::directory_iterator(std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests")) {
    if (e.path().extension() != ".csv") continue;
    for (const NcclTestRow& row : load_nccl_tests(e.path().string())) {
      // CollNet rows move a node's data through the switches' reduction, not its ring or tree: they say
      // nothing of the efficiency at scale the range stands for.
      if (row.nodes < 2 || row.collnet) continue;
      const auto inst = map.instance_for(row);
      if (!inst) continue;
      const std::string fabric = cat.find_instance(*inst)->network.fabric.name;
      auto it = seen.find(fabric);
      if (it == seen.end()) seen.emplace(fabric, NodeRange{row.nodes, row.nodes});
      else it->second = it->second.including(row.nodes);
    }
  }
  REQUIRE(seen.count("infiniband-ndr"));
  REQUIRE(seen.count("efa-v2"));
  CHECK(seen["infiniband-ndr"] == NodeRange{2, 8});
  CHECK(seen["efa-v2"] == NodeRange{2, 32});
  // Beyond the rows only where the catalog cites a text: efa-2019's 8-32 nodes of NVIDIA/nccl#235 (its
  // CSV rows reach 8).
  const std::map<std::string, NodeRange> from_text = {{"efa-2019", NodeRange{2, 32}}};
  for (const auto& [fabric, rows] : seen) {
    const FabricSpec* f = cat.find_fabric(fabric);
    REQUIRE(f);
    REQUIRE_MESSAGE(f->measured_nodes, fabric << " has published rows but no measured_nodes");
    auto text = from_text.find(fabric);
    CHECK_MESSAGE(*f->measured_nodes == (text == from_text.end() ? rows : text->second),
                  fabric << ": catalog " << f->measured_nodes->str() << ", rows " << rows.str());
  }
  CHECK(seen.at("efa-2019").hi == 8);
  CHECK(cat.find_fabric("efa-2019")->source.find("NVIDIA/nccl#235") != std::string::npos);
  // Assumed fabrics say so: RoCE has no published multi-node row.
  CHECK_FALSE(seen.count("roce-1600g"));
  CHECK_FALSE(cat.find_fabric("roce-1600g")->measured_nodes);
}

TEST_CASE("measured_nodes: the note appears beyond the range or on an assumed fabric, never inside it or on one node") {
  const FabricSpec& ndr = *HardwareCatalog::builtin().find_fabric("infiniband-ndr");
  CHECK(ndr.extrapolation_note(1).empty());
  CHECK(ndr.extrapolation_note(8).empty());
  const std::string beyond = ndr.extrapolation_note(64);
  CHECK(beyond.find("measurements on 2-8 nodes") != std::string::npos);
  CHECK(beyond.find("64 nodes") != std::string::npos);
  const std::string assumed = HardwareCatalog::builtin().find_fabric("roce-1600g")->extrapolation_note(2);
  CHECK(assumed.find("assumed") != std::string::npos);
  CHECK(HardwareCatalog::builtin().find_fabric("roce-1600g")->extrapolation_note(1).empty());
}

TEST_CASE("measured_nodes: simulate and collective warn beyond the fabric's measurements unless a calibration sets its efficiencies") {
  auto warned = [](const SimulationResult& r) {
    return std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) { return w.find("measured_nodes") != std::string::npos; });
  };
  // DGX H100 on NDR: measured up to 8 nodes.
  CHECK_FALSE(warned(run(scenario("dgx-h100", 8, "llama2-7b", "zero3", 1, 64))));
  CHECK(warned(run(scenario("dgx-h100", 16, "llama2-7b", "zero3", 1, 128))));
  Scenario own = scenario("dgx-h100", 16, "llama2-7b", "zero3", 1, 128);
  own.calibration.inter_efficiency_at_scale = 0.8;  // this cluster's own, e.g. from micsim calibrate
  CHECK_FALSE(warned(run(own)));

  const auto wide = micsim::test::run_cli("collective --instance dgx-h100 --nodes 32 --op all_gather -b 1M -e 1M");
  CHECK(wide.status == 0);
  CHECK(wide.output.find("# micsim warning: network: fabric infiniband-ndr") != std::string::npos);
  const auto narrow = micsim::test::run_cli("collective --instance dgx-h100 --nodes 4 --op all_gather -b 1M -e 1M");
  CHECK(narrow.status == 0);
  CHECK(narrow.output.find("micsim warning") == std::string::npos);

  // plan: a note under the ranking for the rows shown.
  const auto plan = micsim::test::run_cli(std::string("plan ") + MICSIM_SOURCE_DIR +
                                          "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml --instances dgx-h100 --nodes 16 --strategies zero3 "
                                          "--micro-batches 8 --refine 0");
  CHECK(plan.status == 0);
  CHECK(plan.output.find("Note, network: fabric infiniband-ndr's terms rest on measurements on 2-8 nodes") != std::string::npos);
  // The same note in its JSON, read from the result's network_note (not from warnings, which the plan's rows drop).
  const std::string plan_json = micsim::test::temp_path("measured-nodes-plan.json");
  const auto planned = micsim::test::run_cli(std::string("plan ") + MICSIM_SOURCE_DIR +
                                             "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml --instances dgx-h100 --nodes 8,16 "
                                             "--strategies zero3 --micro-batches 8 --refine 0 --json " + plan_json);
  REQUIRE(planned.status == 0);
  const auto notes = nlohmann::json::parse(micsim::test::read_text(plan_json)).at("network_notes");
  REQUIRE(notes.size() == 1);  // the 16-node rows' note once; the 8-node rows draw none
  CHECK(notes[0].get<std::string>().find("network: fabric infiniband-ndr's terms rest on measurements on 2-8 nodes (catalog measured_nodes); "
                                        "at 16 nodes") == 0);
}

TEST_CASE("measured_nodes: a calibration carries the node counts of the rows it was fitted on, and simulate warns beyond them") {
  const Calibration own = parse_calibration("instance: dgx-h100\nnetwork:\n  inter_efficiency: 0.8\n  measured_nodes: [2, 4]\n", "own.yaml");
  REQUIRE(own.measured_nodes);
  CHECK(*own.measured_nodes == NodeRange{2, 4});
  CHECK(parse_calibration(own.to_yaml(), "again.yaml").measured_nodes == own.measured_nodes);
  CHECK_THROWS_AS(parse_calibration("network:\n  measured_nodes: [4, 2]\n", "bad.yaml"), InputError);
  CHECK_THROWS_AS(parse_calibration("network:\n  measured_nodes: [4]\n", "bad.yaml"), InputError);
  const FabricSpec& ndr = *HardwareCatalog::builtin().find_fabric("infiniband-ndr");
  // Its own range replaces the fabric's: 8 nodes are within NDR's published rows but beyond these logs.
  CHECK(own.network_extrapolation_note(ndr, 4).empty());
  CHECK(own.network_extrapolation_note(ndr, 8).find("own.yaml was fitted on nccl-tests rows on 2-4 nodes") != std::string::npos);
  Calibration hand = own;
  hand.measured_nodes.reset();  // hand-written efficiencies: no range, no warning
  CHECK(hand.network_extrapolation_note(ndr, 64).empty());
  CHECK(Calibration{}.network_extrapolation_note(ndr, 64) == ndr.extrapolation_note(64));

  // micsim calibrate writes the range of the rows it fitted: Voltage Park's 4-node file.
  const std::string out = micsim::test::temp_path("vp-calibration.yaml");
  const auto fit = micsim::test::run_cli(std::string("calibrate --instance dgx-h100 --include-two-node-allreduce --nccl-tests ") +
                                         MICSIM_SOURCE_DIR + "/validation/data/nccl-tests/voltagepark_vpbenchmarking_h100_ib_4_nodes.csv --out " + out);
  REQUIRE(fit.status == 0);
  const Calibration vp = load_calibration(out);
  REQUIRE(vp.sets_inter_efficiency());
  REQUIRE(vp.measured_nodes);
  CHECK(*vp.measured_nodes == NodeRange{4, 4});
  Scenario sc = scenario("dgx-h100", 8, "llama2-7b", "zero3", 1, 64);
  sc.calibration = vp;
  const SimulationResult r = run(sc);
  CHECK(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) { return w.find("rows on 4 nodes") != std::string::npos; }));
  CHECK(r.network_note.find("rows on 4 nodes") != std::string::npos);

  // A --base file's efficiencies keep the base's range when this fit does not set them: here only small
  // messages (Voltage Park's <= 64 KiB rows) fit latencies, and the base's [2, 32] stays.
  const std::string base = micsim::test::temp_file("base-calibration.yaml",
                                                   "instance: dgx-h100\nnetwork:\n  inter_efficiency: 0.85\n  measured_nodes: [2, 32]\n");
  std::istringstream all(micsim::test::read_text(std::string(MICSIM_SOURCE_DIR) +
                                                 "/validation/data/nccl-tests/voltagepark_vpbenchmarking_h100_ib_4_nodes.csv"));
  std::string line, small;
  std::getline(all, line);
  small = line + "\n";  // the header
  while (std::getline(all, line)) {
    if (line.empty()) continue;
    // bytes is the fourth field from the end (bytes, time_us, algbw_GBps, busbw_GBps); the source text before it may hold commas
    size_t at = line.size();
    for (int i = 0; i < 4; ++i) at = line.rfind(',', at - 1);
    if (std::stod(line.substr(at + 1)) <= 64 * 1024) small += line + "\n";
  }
  const std::string small_csv = micsim::test::temp_file("vp-small.csv", small);
  const std::string refit = micsim::test::temp_path("refit-calibration.yaml");
  const auto latencies = micsim::test::run_cli("calibrate --instance dgx-h100 --base " + base + " --nccl-tests " + small_csv + " --out " + refit);
  REQUIRE(latencies.status == 0);
  const Calibration kept = load_calibration(refit);
  REQUIRE(kept.inter_latency_s);  // the small rows did fit something
  REQUIRE(kept.measured_nodes);
  CHECK(*kept.measured_nodes == NodeRange{2, 32});
}

