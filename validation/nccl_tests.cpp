#include "validation/nccl_tests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "models/io/input_file.hpp"
#include "models/io/csv.hpp"
#include "models/io/input_error.hpp"
#include "models/io/yaml_node.hpp"

namespace micsim {

std::optional<double> NcclTestRow::time_or_derived() const {
  if (time_s) return time_s;
  if (algbw && *algbw > 0) return bytes / *algbw;
  if (busbw && *busbw > 0 && op_known) {
    double f = op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce ? 1.0 : busbw_factor(op, ranks);
    if (f > 0) return bytes * f / *busbw;
  }
  return std::nullopt;
}

std::optional<double> NcclTestRow::busbw_or_derived() const {
  if (busbw) return busbw;
  auto t = time_or_derived();
  if (t && *t > 0 && op_known) return bytes / *t * busbw_factor(op, ranks);
  return std::nullopt;
}

namespace {

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string tok;
  while (in >> tok) out.push_back(tok);
  return out;
}

bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0' && std::isfinite(v);
}

bool is_integer(const std::string& s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// Removes "[1,0]<stdout>:" (mpirun --tag-output) and "0: " (srun) prefixes.
std::string strip_prefix(const std::string& line) {
  size_t p = line.find("<stdout>:");
  if (line.rfind("[", 0) == 0 && p != std::string::npos) return line.substr(p + 9);
  size_t i = 0;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i > 0 && i + 1 < line.size() && line[i] == ':' && line[i + 1] == ' ') return line.substr(i + 2);
  return line;
}

const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                       "alltoall", "sendrecv", "gather", "scatter", "hypercube"};

std::string op_from_text(const std::string& s) {
  for (const auto& op : kOps)
    if (s.find(op + "_perf") != std::string::npos) return op;
  return "";
}

// A measurement must be physically possible: a positive time (below 1,000 s), bandwidths below
// 100 TB/s, at most 1 PiB. Zero or absurd values would otherwise print inf % errors and fit nonsense.
void check_measurement(const NcclTestRow& r, const std::string& file, int line) {
  if (r.bytes > double(int64_t(1) << 50)) throw InputError({file, line, 0}, "size", "expected at most 1 PiB");
  if (r.bytes <= 0) return;
  if (r.time_s && !(*r.time_s > 0 && *r.time_s < 1e3))
    throw InputError({file, line, 0}, "time", fmt::format("expected a time > 0 and below 1000 s, got {} s", *r.time_s));
  for (auto [name, v] : {std::pair<const char*, std::optional<double>>{"algbw", r.algbw}, {"busbw", r.busbw}})
    if (v && !(*v >= 0 && *v < 1e14)) throw InputError({file, line, 0}, name, fmt::format("expected 0 to 100,000 GB/s, got {} GB/s", *v / 1e9));
  if (!r.time_s && !(r.algbw && *r.algbw > 0) && !(r.busbw && *r.busbw > 0))
    throw InputError({file, line, 0}, "time", "a row needs a time > 0 or a bandwidth > 0");
}

void set_op(NcclTestRow& r, const std::string& name) {
  r.op_name = name;
  auto op = parse_collective_op(name);
  r.op_known = op.has_value();
  if (op) r.op = *op;
}

}  // namespace

std::string nccl_setting(const std::string& text, const std::string& name) {
  for (const std::string& lead : {name + "=", name + " set by environment to "}) {
    const size_t at = text.find(lead);
    if (at == std::string::npos) continue;
    const size_t from = at + lead.size();
    const size_t end = text.find_first_of(" \t\n\r\"')", from);
    std::string v = text.substr(from, end == std::string::npos ? std::string::npos : end - from);
    while (!v.empty() && (v.back() == ',' || v.back() == ';' || v.back() == '.')) v.pop_back();
    return v;
  }
  return "";
}

bool collnet_enabled(const std::string& text) {
  return nccl_setting(text, "NCCL_COLLNET_ENABLE") == "1" && text.find("SHARP") != std::string::npos;
}

namespace {

// Lower case without underscores: NCCL's spellings ("NVLSTree", "allreduce") against micsim's
// ("nvls_tree", "all_reduce").
std::string canonical(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One choice for `op`, or "" when the value leaves NCCL more than one: a list ("Ring,Tree"), an
// exclusion ("^LL128"), or another operation's ("allgather:ring"). "allreduce:ring" names one operation.
std::string single_choice(const std::string& v, CollectiveOp op) {
  std::string choice = v;
  if (const size_t colon = v.find(':'); colon != std::string::npos)
    choice = canonical(v.substr(0, colon)) == canonical(to_string(op)) ? v.substr(colon + 1) : "";
  return choice.find_first_of(",^;:") == std::string::npos ? canonical(choice) : "";
}

}  // namespace

CollectiveChoice forced_choice(const std::string& text, CollectiveOp op) {
  CollectiveChoice c;
  if (const std::string a = single_choice(nccl_setting(text, "NCCL_ALGO"), op); !a.empty())
    for (auto x : kAllNcclAlgorithms)
      if (canonical(to_string(x)) == a) c.algorithm = x;
  if (const std::string p = single_choice(nccl_setting(text, "NCCL_PROTO"), op); !p.empty())
    if (auto protos = parse_nccl_proto(p); protos && protos->size() == 1) c.protocol = protos->front();
  return c;
}

std::vector<NcclTestRow> parse_nccl_tests_log(const std::string& text, const std::string& file,
                                              const NcclTestsOptions& opt) {
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  std::string op = opt.op;
  std::set<std::string> hosts;
  int ranks = 0;
  std::vector<std::string> header;  // column names of the result table
  double time_scale = 1e-6;         // us by default
  bool saw_unit_line = false;
  std::vector<NcclTestRow> rows;
  std::string environment;  // the log's "NCCL INFO NAME set by environment to VALUE" lines
  while (std::getline(in, raw)) {
    ++lineno;
    std::string line = strip_prefix(raw);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto toks = split_ws(line);
    if (toks.empty()) continue;
    if (line.find(" set by environment to ") != std::string::npos) environment += line + "\n";
    if (toks[0][0] == '#') {
      if (op.empty()) op = op_from_text(line);
      // "#  Rank  0 Group  0 Pid 6899 on HOST device 0 [...] NVIDIA ..." (older: "#   Rank  0 on HOST device ...")
      std::string first = toks[0] == "#" && toks.size() > 1 ? toks[1] : toks[0].substr(1);
      if (first == "Rank") {
        ++ranks;
        for (size_t i = 0; i + 1 < toks.size(); ++i)
          if (toks[i] == "on") hosts.insert(toks[i + 1]);
        continue;
      }
      // The column header: "#  size  count  type  redop  root  time  algbw  busbw  #wrong ..." or
      // the 2017-2019 "#  bytes  N  type  op  time  algbw  busbw  res".
      std::vector<std::string> names;
      for (const auto& t : toks)
        if (t != "#") names.push_back(t[0] == '#' && t != "#wrong" ? t.substr(1) : t);
      bool has_time = false, has_busbw = false;
      for (const auto& n : names) has_time |= n == "time" || n == "cputime", has_busbw |= n == "busbw";
      if (has_time && has_busbw && !names.empty() && (names[0] == "size" || names[0] == "bytes")) {
        header = names;
        if (names[0] == "bytes") time_scale = 1e-3;  // the 2017-2019 format prints milliseconds
        continue;
      }
      if (!header.empty() && line.find("(us)") != std::string::npos) time_scale = 1e-6, saw_unit_line = true;
      if (!header.empty() && line.find("(ms)") != std::string::npos) time_scale = 1e-3, saw_unit_line = true;
      continue;
    }
    if (!is_integer(toks[0])) {
      if (op.empty()) op = op_from_text(line);
      continue;  // NCCL INFO lines, mpirun noise, command echoes
    }
    if (header.empty()) {
      if (toks.size() >= 4 && is_integer(toks[1]))
        throw InputError({file, lineno, 0}, "", "result row before the column header (is the log cut at the top?)");
      continue;
    }
    // size count type [redop] [root] time algbw busbw wrong [time algbw busbw wrong]
    size_t i = 0;
    NcclTestRow r;
    r.file = file;
    r.source = file;
    r.line = lineno;
    double v;
    if (!parse_number(toks[i++], v) || v < 0)
      throw InputError({file, lineno, 0}, "size", fmt::format("expected a byte count >= 0, got '{}'", toks[i - 1]));
    r.bytes = v;
    if (i >= toks.size() || !is_integer(toks[i++]))
      throw InputError({file, lineno, 0}, "count", "truncated or malformed row: expected an element count");
    if (i >= toks.size()) throw InputError({file, lineno, 0}, "type", "truncated row: expected a data type");
    ++i;  // type
    if (i < toks.size() && !parse_number(toks[i], v)) ++i;  // redop (absent for old all_gather)
    bool has_root = false;
    for (const auto& n : header) has_root |= n == "root";
    if (has_root) ++i;
    if (i + 2 >= toks.size())
      throw InputError({file, lineno, 0}, "", fmt::format("truncated row: expected time, algbw and busbw, got {} fields", toks.size()));
    double t, alg, bus;
    if (!parse_number(toks[i], t)) throw InputError({file, lineno, 0}, "time", fmt::format("expected a number, got '{}'", toks[i]));
    if (!parse_number(toks[i + 1], alg)) throw InputError({file, lineno, 0}, "algbw", fmt::format("expected a number, got '{}'", toks[i + 1]));
    if (!parse_number(toks[i + 2], bus)) throw InputError({file, lineno, 0}, "busbw", fmt::format("expected a number, got '{}'", toks[i + 2]));
    r.time_s = t * time_scale;
    r.algbw = alg * 1e9;
    r.busbw = bus * 1e9;
    check_measurement(r, file, lineno);
    if (r.bytes > 0) rows.push_back(r);  // 0-byte rows measure nothing
  }
  (void)saw_unit_line;
  if (header.empty()) throw InputError({file, 0, 0}, "", "no nccl-tests result table found (no '# size ... time algbw busbw' header)");
  if (rows.empty()) throw InputError({file, lineno, 0}, "", "no result rows after the column header (truncated log?)");
  if (op.empty())
    throw InputError({file, 0, 0}, "", "cannot tell which collective this log measures (no '*_perf' in it); pass --op");
  int nr = opt.ranks > 0 ? opt.ranks : ranks;
  int nn = opt.nodes > 0 ? opt.nodes : int(hosts.size());
  if (nr <= 0) throw InputError({file, 0, 0}, "", "no '# Rank N ... on HOST' lines: pass --ranks and --nodes");
  if (nn <= 0) nn = 1;
  if (nr > (1 << 24) || nn > (1 << 20) || nr % nn != 0)
    throw InputError({opt.ranks > 0 ? "--ranks " + std::to_string(opt.ranks) : file, 0, 0}, "ranks",
                     fmt::format("{} ranks on {} nodes: expected the same number of ranks on every node (ranks a multiple of nodes)", nr, nn));
  for (auto& r : rows) {
    set_op(r, op);
    r.ranks = nr;
    r.nodes = nn;
    r.forced = forced_choice(text, r.op);
    r.environment = environment;
    r.collnet = collnet_enabled(text);
  }
  return rows;
}

std::vector<NcclTestRow> parse_nccl_tests_csv(const std::string& text, const std::string& file) {
  CsvTable t = parse_csv(text, file);
  const std::vector<std::string> need = {"source", "cluster", "gpus", "nodes", "collective", "bytes", "time_us",
                                         "algbw_GBps", "busbw_GBps"};
  for (const auto& n : need)
    if (t.column(n) < 0) throw InputError({file, 1, 0}, n, "missing column (expected " + join_choices(need) + ")");
  std::vector<NcclTestRow> rows;
  for (const auto& row : t.rows) {
    auto f = [&](const char* name) -> const std::string& { return row.fields[t.column(name)]; };
    NcclTestRow r;
    r.file = file;
    r.line = row.line;
    r.source = f("source");
    r.cluster = f("cluster");
    set_op(r, f("collective"));
    double v;
    auto num = [&](const char* name, bool required) -> std::optional<double> {
      const std::string& s = f(name);
      if (s.empty()) {
        if (required) throw InputError({file, row.line, 0}, name, "required value is empty");
        return std::nullopt;
      }
      if (!parse_number(s, v) || v < 0) throw InputError({file, row.line, 0}, name, fmt::format("expected a number >= 0, got '{}'", s));
      return v;
    };
    const double gpus = *num("gpus", true), nodes = *num("nodes", true);
    if (gpus < 1 || gpus > (1 << 24) || nodes < 1 || nodes > (1 << 20) || gpus != std::floor(gpus) || nodes != std::floor(nodes))
      throw InputError({file, row.line, 0}, "gpus", "expected whole numbers: gpus in [1, 2^24], nodes in [1, 2^20]");
    r.ranks = int(gpus);
    r.nodes = int(nodes);
    r.bytes = *num("bytes", true);
    if (auto x = num("time_us", false)) r.time_s = *x * 1e-6;
    if (auto x = num("algbw_GBps", false)) r.algbw = *x * 1e9;
    if (auto x = num("busbw_GBps", false)) r.busbw = *x * 1e9;
    if (r.ranks % r.nodes != 0) throw InputError({file, row.line, 0}, "gpus", "expected a multiple of nodes (the same GPUs on every node)");
    // A row states its settings in either column (NcclTestRow::environment): NCCL_ALGO in the cluster's
    // description counts as much as in the source's command.
    const std::string settings = r.source + "\n" + r.cluster;
    r.forced = forced_choice(settings, r.op);
    r.collnet = collnet_enabled(settings);
    check_measurement(r, file, row.line);
    if (r.bytes > 0) rows.push_back(r);  // 0-byte rows measure nothing
  }
  return rows;
}

std::vector<NcclTestRow> load_nccl_tests(const std::string& path, const NcclTestsOptions& opt) {
  std::string text = read_whole_file(path);
  if (text.rfind("source,cluster,", 0) == 0) return parse_nccl_tests_csv(text, path);
  return parse_nccl_tests_log(text, path, opt);
}

std::string nccl_tests_header() {
  return "#                                                              out-of-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
}

static std::string float_str(double v, int width) {
  // nccl-tests getFloatStr: 2 decimals when they fit, else 1, else 0.
  for (int prec = 2; prec >= 0; --prec) {
    std::string s = fmt::format("{:.{}f}", v, prec);
    if (int(s.size()) <= width) return s;
  }
  return fmt::format("{:.0f}", v);
}

std::string nccl_tests_line(CollectiveOp op, double bytes, int elem_size, double time_s, double factor) {
  const bool reduces = op == CollectiveOp::AllReduce || op == CollectiveOp::ReduceScatter || op == CollectiveOp::Reduce;
  const bool rooted = op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
  const double algbw = time_s > 0 ? bytes / time_s / 1e9 : 0;
  return fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}\n", int64_t(bytes),
                     int64_t(bytes / elem_size), "float", reduces ? "sum" : "none", rooted ? "0" : "-1",
                     float_str(time_s * 1e6, 7), float_str(algbw, 6), float_str(algbw * factor, 6));
}

}  // namespace micsim
