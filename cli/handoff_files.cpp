// Writing a set of hand-off files into a directory (plan --handoff-dir, micsim handoff --out-dir):
// the directory is created if its parent exists; every file is checked with the run's other outputs
// before any work, and written whole (write_output_file).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "cli/commands.hpp"
#include "models/io/input_error.hpp"
#include "planner/handoff/handoff.hpp"

namespace micsim::cli {

namespace {
const char* kHandoffNames[] = {"ds_config.json", "train_fsdp2.py", "torchtitan.toml", "accelerate.yaml", "megatron_args.sh", "HANDOFF.md"};
}

std::map<std::string, std::string> handoff_outputs(OutputPlan& outputs, const std::string& dir) {
  std::map<std::string, std::string> paths;
  if (dir.empty()) return paths;
  if (dir == "-") throw InputError({"--handoff-dir -", 0, 0}, "", "hand-offs are several files: give a directory");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (::mkdir(dir.c_str(), 0777) != 0)
      throw InputError({dir, 0, 0}, "", std::string("cannot create the hand-off directory: ") + std::strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    throw InputError({dir, 0, 0}, "", "exists and is not a directory");
  }
  for (const char* name : kHandoffNames) {
    const std::string path = dir + "/" + name;
    outputs.output("--handoff-dir", path);
    paths[name] = path;
  }
  return paths;
}

void write_handoffs(const std::map<std::string, std::string>& paths, const std::vector<HandoffFile>& files) {
  if (paths.empty()) return;
  for (const auto& f : files) write_output_file(paths.at(f.name), f.text);
}

}  // namespace micsim::cli
