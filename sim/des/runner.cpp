// Runs the SimGrid engine in a forked child: SimGrid allows one engine per process, and a crash or an
// abort inside it must not take the caller down. The child writes its outcome to a temporary file
// that is unlinked as soon as it is created (parent and child share the open file), so nothing is
// left in /tmp whoever is killed; the parent reads it and the child's peak memory (wait4). The child
// dies with its parent (PR_SET_PDEATHSIG): a killed `micsim plan` leaves no engine running.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "models/io/output_file.hpp"
#include "sim/des/des_engine.hpp"

namespace micsim::des {

namespace {

struct Writer {
  FILE* f;
  void put(const void* p, size_t n) {
    if (fwrite(p, 1, n, f) != n) throw std::runtime_error("write failed");
  }
  template <class T>
  void val(const T& v) { put(&v, sizeof v); }
  void timeline(const StepTimeline& t) {
    val(t.iteration_time_s), val(t.compute_s), val(t.exposed_comm_s), val(t.idle_s);
    uint64_t n = t.tasks.size();
    val(n);
    if (n) put(t.tasks.data(), n * sizeof(TaskTiming));
  }
};

struct Reader {
  FILE* f;
  void get(void* p, size_t n) {
    if (fread(p, 1, n, f) != n) throw std::runtime_error("simgrid engine: truncated result from the child process");
  }
  template <class T>
  T val() {
    T v;
    get(&v, sizeof v);
    return v;
  }
  StepTimeline timeline() {
    StepTimeline t;
    t.iteration_time_s = val<double>(), t.compute_s = val<double>(), t.exposed_comm_s = val<double>(), t.idle_s = val<double>();
    uint64_t n = val<uint64_t>();
    if (n > (uint64_t(1) << 32)) throw std::runtime_error("simgrid engine: corrupt result");
    t.tasks.resize(n);
    if (n) get(t.tasks.data(), n * sizeof(TaskTiming));
    return t;
  }
};

}  // namespace

namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;  // the outcome file, already unlinked
};

std::string temp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

Child start_child(const PreparedSimulation& p, const DesOptions& opt) {
  std::string tmpl = temp_dir() + "/micsim-des-XXXXXX";
  std::vector<char> path(tmpl.begin(), tmpl.end());
  path.push_back('\0');
  int fd = mkstemp(path.data());
  if (fd < 0) throw std::runtime_error(std::string("simgrid engine: cannot create a temporary file: ") + strerror(errno));
  unlink(path.data());  // anonymous from now on: no file is left behind, whatever happens
  fflush(stdout);
  fflush(stderr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    throw std::runtime_error("simgrid engine: fork failed");
  }
  if (pid == 0) {
    // Die with the parent (if it is already gone, getppid() has changed: leave now).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(5);
    reset_output_cleanup_in_child();
    int rc = 0;
    try {
      DesOutcome out = run_simgrid(p, opt);
      FILE* f = fdopen(fd, "wb");
      Writer w{f};
      w.val(out.critical_node), w.val(out.simulated_nodes), w.val(out.wall_s), w.val(uint64_t(out.flows)), w.val(uint64_t(out.events));
      w.timeline(out.critical);
      uint64_t nodes = out.nodes.size();
      w.val(nodes);
      for (const auto& t : out.nodes) w.timeline(t);
      if (fclose(f) != 0) rc = 3;
    } catch (const std::exception& e) {
      fprintf(stderr, "micsim: simgrid engine failed: %s\n", e.what());
      rc = 4;
    }
    _exit(rc);
  }
  return Child{pid, fd};
}

DesOutcome finish_child(const Child& c, int status, const struct rusage& ru) {
  DesOutcome out;
  try {
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error(WIFSIGNALED(status) ? std::string("simgrid engine: child killed by signal ") + strsignal(WTERMSIG(status))
                                                   : "simgrid engine: child failed");
    FILE* f = fdopen(dup(c.fd), "rb");
    if (!f || fseek(f, 0, SEEK_SET) != 0) throw std::runtime_error("simgrid engine: cannot read the result");
    Reader r{f};
    try {
      out.critical_node = r.val<int>();
      out.simulated_nodes = r.val<int>();
      out.wall_s = r.val<double>();
      out.flows = r.val<uint64_t>();
      out.events = r.val<uint64_t>();
      out.critical = r.timeline();
      uint64_t nodes = r.val<uint64_t>();
      for (uint64_t i = 0; i < nodes; ++i) out.nodes.push_back(r.timeline());
    } catch (...) {
      fclose(f);
      throw;
    }
    fclose(f);
  } catch (...) {
    close(c.fd);
    throw;
  }
  close(c.fd);
  out.peak_rss_kib = ru.ru_maxrss;
  return out;
}

}  // namespace

DesOutcome run_isolated(const PreparedSimulation& p, const DesOptions& opt) {
  Child c = start_child(p, opt);
  int status = 0;
  struct rusage ru {};
  while (wait4(c.pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  return finish_child(c, status, ru);
}

std::vector<DesOutcome> run_isolated_many(const std::vector<const PreparedSimulation*>& sims, int parallel,
                                          const std::function<void(size_t, const DesOutcome&)>& on_done,
                                          const std::function<void()>& heartbeat) {
  // Children are forked from this thread, while no other thread of micsim's runs (a fork while
  // another thread holds a lock leaves the child that lock forever); up to `parallel` run at once.
  std::vector<DesOutcome> out(sims.size());
  std::vector<std::pair<Child, size_t>> running;
  std::vector<std::string> errors(sims.size());
  size_t next = 0;
  DesOptions opt;
  // On any error (a failed child, a callback that cannot save), the children still running are
  // stopped and reaped before the error propagates.
  struct StopRunning {
    std::vector<std::pair<Child, size_t>>& running;
    ~StopRunning() {
      for (auto& [c, i] : running) {
        kill(c.pid, SIGKILL);
        int st = 0;
        while (waitpid(c.pid, &st, 0) < 0 && errno == EINTR) {
        }
        close(c.fd);
      }
    }
  } stop{running};
  while (next < sims.size() || !running.empty()) {
    while (next < sims.size() && int(running.size()) < std::max(1, parallel)) {
      running.emplace_back(start_child(*sims[next], opt), next);
      ++next;
    }
    int status = 0;
    struct rusage ru {};
    pid_t pid = wait4(-1, &status, heartbeat ? WNOHANG : 0, &ru);
    if (pid == 0) {  // none finished yet
      heartbeat();
      usleep(20000);
      continue;
    }
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("simgrid engine: wait failed");
    }
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].first.pid != pid) continue;
      const size_t index = running[i].second;
      out[index] = finish_child(running[i].first, status, ru);
      running.erase(running.begin() + long(i));
      if (on_done) on_done(index, out[index]);
      break;
    }
  }
  return out;
}

}  // namespace micsim::des

namespace micsim::des {

std::vector<double> simgrid_collective_times(const InstanceSpec& inst, int nodes, int gpus_per_node,
                                             const NetworkParams& net, const std::vector<CollectiveEstimate>& calls) {
  // A one-stream task graph of the collectives, over a world group of the requested shape.
  PreparedSimulation p;
  p.scenario.cluster.instance = inst;
  p.scenario.cluster.instance.gpus_per_node = inst.gpus_per_node;
  p.scenario.cluster.nodes = nodes;
  p.scenario.name = "collective sweep";
  p.layout.nodes = nodes;
  p.layout.gpus_per_node = inst.gpus_per_node;
  p.layout.world = nodes * inst.gpus_per_node;
  p.layout.partition_size = p.layout.world;
  p.network = net;
  p.compute_calibration.interference = 0;
  (void)gpus_per_node;  // the estimates carry the group shape (ranks per node)
  for (size_t i = 0; i < calls.size(); ++i) {
    Task t{TaskKind::GradAllReduce, StreamId::Reduce, -1, 0, uint32_t(p.graph.deps.size()), 0, uint32_t(i)};
    if (i > 0) p.graph.deps.push_back(uint32_t(i - 1));
    t.deps_end = uint32_t(p.graph.deps.size());
    p.graph.tasks.push_back(t);
    p.graph.comm_ops.push_back({calls[i].op, GroupKind::World, calls[i].bytes, 1});
    CommCost c;
    c.estimate = calls[i];
    c.time_s = calls[i].time_s;
    c.uses_intra = calls[i].intra_bytes_per_gpu > 0;
    c.uses_inter = calls[i].inter_bytes_per_node > 0;
    p.costs.comm.push_back(c);
  }
  DesOptions opt;
  DesOutcome out = run_isolated(p, opt);
  std::vector<double> times;
  for (const auto& tt : out.critical.tasks) times.push_back(tt.end - tt.start);
  return times;
}

}  // namespace micsim::des
