#pragma once
// A NCCL tuner plugin as data: the regions of the (message size, rank count) plane where the plugin
// forces an algorithm and protocol (models/catalog/nccl_tuners.yaml). NCCL asks the plugin before it
// uses its own cost model; micsim does the same in CollectiveModel::estimate, so a cluster that loads a
// plugin (AWS P5 with aws-ofi-nccl's tuner) runs, in the model, the algorithm it really runs.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/hardware/hardware.hpp"

namespace micsim {

enum class CollectiveOp;
enum class Protocol;
class YamlNode;

struct TunerRegion {
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  Protocol protocol;
  std::vector<std::pair<double, double>> vertices;  // (bytes, ranks), linear coordinates
  // Inside or on an edge (the plugin counts edges as inside).
  bool contains(double bytes, double ranks) const;
};

struct NcclTuner {
  std::string name;
  int ranks_per_node = 8;
  int min_nodes = 3;
  std::string source;
  std::map<CollectiveOp, std::vector<TunerRegion>> regions;  // tried in order; the first match wins

  // The regions that apply to this point, in the plugin's order (empty: NCCL decides). The caller
  // takes the first whose algorithm can run here, as the plugin skips combinations NCCL marks invalid.
  std::vector<const TunerRegion*> matches(CollectiveOp op, double bytes, int ranks, int nodes) const;

  static NcclTuner parse(const YamlNode& n, const std::string& name);
};

// The embedded tuners (models/catalog/nccl_tuners.yaml); nullptr for an unknown name.
const NcclTuner* find_nccl_tuner(const std::string& name);
std::vector<std::string> nccl_tuner_names();

}  // namespace micsim
