#pragma once
// The catalog YAML files, embedded at build time (cmake/EmbedCatalog.cmake).
#include <string>
#include <vector>

namespace micsim::catalog_data {
struct EmbeddedFile {
  const char* path;     // relative to the source tree, e.g. "models/catalog/instances.yaml"
  const char* content;
};
const std::vector<EmbeddedFile>& files();
}  // namespace micsim::catalog_data
