#include "models/calibration/error_bands.hpp"

#include "models/hardware/catalog.hpp"
#include "models/io/yaml_node.hpp"

namespace micsim {

std::string ErrorBands::generation_name(GpuArch a) {
  return a == GpuArch::Volta ? "volta" : a == GpuArch::Ampere ? "ampere" : "hopper";
}

const ErrorBands& ErrorBands::builtin() {
  static const ErrorBands bands = [] {
    ErrorBands b;
    YamlNode root = load_embedded_catalog("models/catalog/error_bands.yaml");
    root.check_keys({"source", "minimum_sources", "bands"});
    b.source_ = root.at("source").as_string();
    for (const auto& item : root.at("bands").items()) {
      item.check_keys({"gpu", "family", "rows", "sources", "q05", "q95", "rel_q05", "rel_q95"});
      b.bands_.push_back({item.at("gpu").as_string(), item.at("family").as_string(), int(item.at("rows").as_int_in(0, 1 << 20)),
                          int(item.at("sources").as_int_in(0, 1 << 20)), item.at("q05").as_double_in(-1, 10),
                          item.at("q95").as_double_in(-1, 10), item.at("rel_q05").as_double_in(-1, 10),
                          item.at("rel_q95").as_double_in(-1, 10)});
    }
    return b;
  }();
  return bands;
}

std::vector<std::pair<std::string, std::string>> ErrorBands::classes(GpuArch arch, bool sharded) {
  const std::string gen = generation_name(arch);
  return {{gen, sharded ? "sharded" : "replicated"}, {gen, "all"}, {"all", "all"}};
}

const ErrorBand* ErrorBands::find(const std::vector<ErrorBand>& bands, GpuArch arch, bool sharded) {
  for (const auto& want : classes(arch, sharded))
    for (const auto& b : bands)
      if (b.gpu_generation == want.first && b.family == want.second) return &b;
  return nullptr;
}

const ErrorBand& ErrorBands::for_prediction(GpuArch arch, bool sharded) const {
  if (const ErrorBand* b = find(bands_, arch, sharded)) return *b;
  static const ErrorBand none{"all", "all", 0, 0, 0, 0, 0, 0};
  return bands_.empty() ? none : bands_.back();
}

}  // namespace micsim
