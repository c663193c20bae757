#include "models/io/output_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>

namespace micsim {

namespace {

namespace fs = std::filesystem;

std::string os_reason(int err) { return std::strerror(err); }

// ---- temporaries removed on SIGINT / SIGTERM / SIGHUP ---------------------------------------------
// Async-signal-safe: a fixed table of paths, each slot claimed with an atomic flag.
constexpr int kTempSlots = 16;
std::array<std::array<char, PATH_MAX>, kTempSlots> g_temp_paths;
std::array<std::atomic<int>, kTempSlots> g_temp_used{};
std::atomic<bool> g_handlers_installed{false};
mode_t g_umask = 022;

extern "C" void remove_temps_and_reraise(int sig) {
  for (int i = 0; i < kTempSlots; ++i)
    if (g_temp_used[i].load() == 1) ::unlink(g_temp_paths[i].data());
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

int register_temp(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (g_temp_used[i].compare_exchange_strong(expected, 2)) {  // 2 = being filled
      std::memcpy(g_temp_paths[i].data(), path.c_str(), path.size() + 1);
      g_temp_used[i].store(1);
      return i;
    }
  }
  return -1;  // more than 16 writes at once: the file is still written, only not cleaned on a signal
}

void release_temp(int slot) {
  if (slot >= 0) g_temp_used[slot].store(0);
}

// ---- paths ----------------------------------------------------------------------------------------

// Follows symbolic links to the path that will really be written (which need not exist yet).
std::string resolve_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    fs::path target = fs::read_symlink(p, ec);
    if (ec) throw OutputError(path, "cannot follow the symbolic link: " + ec.message());
    p = target.is_absolute() ? target.string() : (fs::path(p).parent_path() / target).string();
  }
  throw OutputError(path, "cannot follow the symbolic link: " + os_reason(ELOOP));
}

std::string parent_dir(const std::string& path) {
  fs::path d = fs::path(path).parent_path();
  return d.empty() ? "." : d.string();
}

// Same file <=> same identity: device and inode when it exists, the normalised path otherwise.
std::string identity_of(const std::string& resolved) {
  struct stat st {};
  if (::stat(resolved.c_str(), &st) == 0) return "inode:" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(resolved, ec), ec);
  return "path:" + abs.lexically_normal().string();
}

// Removes temporaries of `base` left in `dir` by processes that no longer exist (kill -9).
void remove_stale_temps(const std::string& dir, const std::string& base) {
  const std::string prefix = "." + base + ".micsim-";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == long(::getpid())) continue;
    if (::kill(pid_t(pid), 0) == -1 && errno == ESRCH) ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
}

void write_all(int fd, const std::string& content, const std::string& shown) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw OutputError(shown, "cannot write: " + os_reason(errno));
    }
    p += n;
    left -= size_t(n);
  }
}

// Device, FIFO: open and write, never create, truncate-and-replace or rename.
void write_through(const std::string& resolved, const std::string& shown, const std::string& content) {
  int fd = ::open(resolved.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw OutputError(shown, "cannot open for writing: " + os_reason(errno));
  try {
    write_all(fd, content, shown);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0 && errno != EINTR) throw OutputError(shown, "cannot write: " + os_reason(errno));
}

// Regular file or a new one: temporary in the same directory, fsync, rename.
void write_replacing(const std::string& resolved, const std::string& shown, const std::string& content) {
  install_output_cleanup();
  const std::string dir = parent_dir(resolved), base = fs::path(resolved).filename().string();
  remove_stale_temps(dir, base);
  std::string tmpl = dir + "/." + base + ".micsim-" + std::to_string(::getpid()) + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) throw OutputError(shown, "cannot create a file in '" + dir + "': " + os_reason(errno));
  const std::string tmp = buf.data();
  const int slot = register_temp(tmp);
  auto fail = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    release_temp(slot);
    throw OutputError(shown, what + ": " + os_reason(err));
  };
  // Keep an existing file's permissions; a new file gets what the umask allows (mkstemp makes 0600).
  struct stat st {};
  mode_t mode = ::stat(resolved.c_str(), &st) == 0 ? (st.st_mode & 07777) : (0666 & ~g_umask);
  if (::fchmod(fd, mode) != 0) fail("cannot set permissions", errno);
  try {
    write_all(fd, content, shown);
  } catch (const OutputError& e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    release_temp(slot);
    throw;
  }
  if (::fsync(fd) != 0) fail("cannot write", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    release_temp(slot);
    throw OutputError(shown, "cannot write: " + os_reason(err));
  }
  if (::rename(tmp.c_str(), resolved.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    release_temp(slot);
    throw OutputError(shown, "cannot replace the file: " + os_reason(err));
  }
  release_temp(slot);
}

}  // namespace

void install_output_cleanup() {
  bool expected = false;
  if (!g_handlers_installed.compare_exchange_strong(expected, true)) return;
  g_umask = ::umask(0);
  ::umask(g_umask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // e.g. under nohup: keep ignoring
    struct sigaction sa {};
    sa.sa_handler = remove_temps_and_reraise;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

void reset_output_cleanup_in_child() {
  for (auto& u : g_temp_used) u.store(0);
  if (g_handlers_installed.load())
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
}

namespace {
std::atomic<bool> g_outputs_suppressed{false};
}

void suppress_outputs(bool on) { g_outputs_suppressed = on; }
bool outputs_suppressed() { return g_outputs_suppressed; }

void write_stdout(const std::string& text) {
  if (g_outputs_suppressed) return;
  std::cout.flush();
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    throw OutputError("standard output", "cannot write: " + os_reason(errno));
  if (std::fflush(stdout) != 0) throw OutputError("standard output", "cannot write: " + os_reason(errno));
}

void finish_stdout() {
  if (g_outputs_suppressed) return;
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout)
    throw OutputError("standard output", "cannot write: " + (errno ? os_reason(errno) : std::string("output lost")));
}

void write_output_file(const std::string& path, const std::string& content) {
  if (g_outputs_suppressed) return;
  if (path == "-") return write_stdout(content);
  const std::string resolved = resolve_links(path);
  struct stat st {};
  if (::stat(resolved.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw OutputError(path, "is a directory; expected a file to write");
    if (!S_ISREG(st.st_mode)) return write_through(resolved, path, content);
  }
  write_replacing(resolved, path, content);
}

// ---- OutputPlan -----------------------------------------------------------------------------------

void OutputPlan::input(const std::string& path) {
  if (path.empty() || path == "-") return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // the reader reports a missing input
  add({"input", path, identity_of(path), true, !S_ISREG(st.st_mode)});
}

void OutputPlan::output(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  if (path == "-") return add({flag, path, "stdout", false, false});
  const std::string resolved = resolve_links(path);
  struct stat st {};
  bool through = false;
  if (::stat(resolved.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw OutputError(path, flag + ": is a directory; expected a file to write");
    through = !S_ISREG(st.st_mode);
    if (through && ::access(resolved.c_str(), W_OK) != 0) throw OutputError(path, flag + ": not writable: " + os_reason(errno));
  }
  if (!through) {
    const std::string dir = parent_dir(resolved);
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
      throw OutputError(path, flag + ": the directory '" + dir + "' does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
      throw OutputError(path, flag + ": cannot write in the directory '" + dir + "': " + os_reason(errno));
  }
  add({flag, path, identity_of(resolved), false, through});
}

void OutputPlan::read_write(const std::string& flag, const std::string& path) { output(flag, path); }

void OutputPlan::add(Entry e) {
  for (const auto& o : entries_) {
    if (o.identity != e.identity) continue;
    if (o.through && e.through) continue;  // /dev/null twice is harmless
    if (o.is_input && e.is_input) continue;
    const Entry& out = e.is_input ? o : e;
    const Entry& other = e.is_input ? e : o;
    if (other.is_input)
      throw OutputError(out.path, out.flag + ": this file is an input of the run (" + other.path + "); refusing to overwrite it");
    if (out.path == "-")
      throw OutputError("standard output", out.flag + " and " + other.flag + " both write to standard output; give one of them a file");
    throw OutputError(out.path, out.flag + " and " + other.flag + " name the same file; give each output its own file");
  }
  entries_.push_back(std::move(e));
}

}  // namespace micsim
