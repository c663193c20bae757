#include "planner/plan_checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "models/io/input_file.hpp"
#include "models/io/json_input.hpp"
#include "models/io/output_file.hpp"
#include "sim/report/report.hpp"

namespace micsim {

namespace {
const char* kMagic = "micsim-plan-checkpoint 2 ";
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

PlanCheckpoint::~PlanCheckpoint() {
  if (fd_ >= 0) ::close(fd_);
}

void check_result_ranges(const SimulationResult& r, const SourceLocation& where) {
  auto check = [&](const char* name, double v, double lo, double hi) {
    if (!std::isfinite(v) || v < lo || v > hi)
      throw InputError(where, name, fmt::format("stored value {} is outside [{}, {}]: the checkpoint was edited or is damaged", v, lo, hi));
  };
  check("iteration_time_s", r.iteration_time_s, 1e-9, 1e9);
  check("samples_per_s", r.samples_per_s, 1e-12, 1e15);
  check("tokens_per_s", r.tokens_per_s, 1e-12, 1e18);
  check("tflops_per_gpu", r.tflops_per_gpu, 0, 1e6);
  check("mfu", r.mfu, 0, 2);
  check("hfu", r.hfu, 0, 2);
  check("compute_s", r.compute_s, 0, 1e9);
  check("exposed_comm_s", r.exposed_comm_s, 0, 1e9);
  check("idle_s", r.idle_s, 0, 1e9);
  check("world_size", r.world_size, 1, 1 << 24);
  check("partition_size", r.partition_size, 1, 1 << 24);
  check("memory.peak_bytes_per_gpu", r.memory.peak_bytes, 0, 1e15);
  // Derived quantities must agree with the step time they came from (to 1e-9 relative).
  const double tokens = double(r.global_batch) * double(r.seq_len);
  if (std::fabs(r.tokens_per_s * r.iteration_time_s - tokens) > 1e-9 * tokens)
    throw InputError(where, "tokens_per_s", "does not match global_batch x seq_len / iteration_time_s: the checkpoint was edited or is damaged");
  for (const auto& c : r.collectives) {
    check("collectives.time_s", c.estimate.time_s, 0, 1e9);
    check("collectives.bytes", c.estimate.bytes, 0, 1e18);
  }
}

void PlanCheckpoint::start_afresh() {
  write_output_file(path_, std::string(kMagic) + key_ + "\n");
}

std::map<size_t, SimulationResult> PlanCheckpoint::load(size_t candidates) {
  std::map<size_t, SimulationResult> out;
  if (path_.empty()) return out;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 || st.st_size == 0) {
    start_afresh();
  } else {
    const std::string text = read_whole_file(path_);  // regular files only
    const size_t eol = text.find('\n');
    const std::string header = text.substr(0, eol);
    if (header.rfind(kMagic, 0) != 0)
      throw InputError({path_, 1, 1}, "", "not a micsim plan checkpoint (written by another program, or an older micsim?); "
                                          "give another file or delete this one");
    if (header.substr(std::strlen(kMagic)) != key_) {
      std::fprintf(stderr, "micsim plan: %s holds another search (other scenario, options or micsim version); starting afresh\n",
                   path_.c_str());
      start_afresh();
    } else {
      size_t pos = eol == std::string::npos ? text.size() : eol + 1, good_end = pos;
      int line = 1;
      while (pos < text.size()) {
        ++line;
        const size_t end = text.find('\n', pos);
        if (end == std::string::npos) break;  // cut short by a kill: dropped below
        const std::string rec = text.substr(pos, end - pos);
        const SourceLocation where{path_, line, 0};
        const size_t sp = rec.find(' ');
        if (sp != 16 || fmt::format("{:016x}", fnv1a64(rec.substr(sp + 1))) != rec.substr(0, 16))
          throw InputError(where, "", "damaged record (its checksum does not match); delete the file to start afresh");
        nlohmann::json j = parse_json_input(rec.substr(sp + 1), path_, "plan checkpoint");
        try {
          const size_t index = j.at("index").get<size_t>();
          if (index >= candidates) throw InputError(where, "index", "refers to no candidate of this search");
          SimulationResult r = result_from_json(j.at("simgrid"));
          if (r.engine != "simgrid") throw InputError(where, "engine", "expected a SimGrid result");
          check_result_ranges(r, where);
          out[index] = std::move(r);
        } catch (const nlohmann::json::exception& e) {
          throw InputError(where, "", std::string("damaged record: ") + e.what());
        }
        pos = end + 1;
        good_end = pos;
      }
      if (good_end < text.size()) {
        std::fprintf(stderr, "micsim plan: %s: dropped an incomplete last record (the run was killed while writing it)\n",
                     path_.c_str());
        if (::truncate(path_.c_str(), off_t(good_end)) != 0)
          throw OutputError(path_, std::string("cannot truncate: ") + std::strerror(errno));
      }
    }
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw OutputError(path_, std::string("cannot open for appending: ") + std::strerror(errno));
  return out;
}

void PlanCheckpoint::append(size_t index, const SimulationResult& simgrid) {
  if (fd_ < 0) return;
  nlohmann::json j = {{"index", index}, {"simgrid", to_exact_json(simgrid)}};
  const std::string body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string line = fmt::format("{:016x} {}\n", fnv1a64(body), body);
  // One write() in append mode: a kill leaves either the whole line or a prefix of it (dropped on load).
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw OutputError(path_, std::string("cannot write: ") + std::strerror(errno));
    p += n;
    left -= size_t(n);
  }
  if (::fsync(fd_) != 0 && errno != EINVAL) throw OutputError(path_, std::string("cannot write: ") + std::strerror(errno));
}

}  // namespace micsim
