#pragma once
// The hardware catalog (models/catalog/instances.yaml): parse once, look up by name.
// Inline instance specs in scenarios go through the same parser, so both are validated alike.
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"
#include "models/io/yaml_node.hpp"

namespace micsim {

// `measured_nodes: [lo, hi]` (1 <= lo <= hi), as a fabric and a calibration file state it.
NodeRange parse_node_range(const YamlNode& n);

class PriceBook;

class HardwareCatalog {
 public:
  // The embedded catalog, merged with user catalogs (--catalog FILE, MICSIM_CATALOG_PATH).
  static const HardwareCatalog& builtin();
  static HardwareCatalog parse(const YamlNode& root);
  // Adds or replaces gpus, fabrics and instances of a file of the same schema (every key optional).
  void merge(const YamlNode& root);
  // Instances without a price of their own take the newest on-demand quote of the price book.
  void fill_prices(const PriceBook& book);

  const InstanceSpec& instance(const std::string& name) const;  // throws std::out_of_range
  const InstanceSpec* find_instance(const std::string& name) const;
  const GpuSpec* find_gpu(const std::string& name) const;
  const FabricSpec* find_fabric(const std::string& name) const;
  std::vector<std::string> instance_names() const;
  std::vector<std::string> gpu_names() const;
  std::vector<std::string> fabric_names() const;

  // An inline `instance:` mapping (same keys as a catalog entry; gpu/fabric may name catalog entries
  // or be inline mappings themselves).
  InstanceSpec parse_instance(const YamlNode& node, const std::string& name) const;

 private:
  std::vector<GpuSpec> gpus_;
  std::vector<FabricSpec> fabrics_;
  std::vector<InstanceSpec> instances_;
  GpuSpec parse_gpu(const YamlNode& node, const std::string& name) const;
  FabricSpec parse_fabric(const YamlNode& node, const std::string& name) const;
};

// Merges a user catalog file (gpus, fabrics, instances, prices; same schema as the embedded files) over
// the built-in catalog; called at start-up, before any lookup. All or nothing: an InputError (file,
// line, key) leaves the catalog as it was.
void add_user_catalog(const std::string& path);
// MICSIM_CATALOG_PATH: files or directories (their *.yaml, sorted), separated by ':'.
std::vector<std::string> catalog_path_files(const std::string& value);

// Finds an embedded catalog file by its path (e.g. "models/catalog/models.yaml").
YamlNode load_embedded_catalog(const std::string& path);

}  // namespace micsim
