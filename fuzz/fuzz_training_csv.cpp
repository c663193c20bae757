// libFuzzer entry point for fuzz::training_csv (see fuzz_targets.hpp for what it checks).
#include "fuzz/fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  micsim::fuzz::training_csv(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
