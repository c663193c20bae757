#include "models/io/atomic_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "models/io/input_error.hpp"

namespace micsim {

void write_file_atomically(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    std::cout.flush();
    return;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError({path, 0, 0}, "", "cannot write output file (directory missing or not writable?)");
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("write failed: " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError({path, 0, 0}, "", "cannot replace output file");
  }
}

std::string read_whole_file(const std::string& path) {
  // Only regular files: a path like /dev/zero or a FIFO given by mistake would otherwise hang or
  // fill memory. Inputs here are configs and logs; 1 GiB is far above any real one.
  constexpr uintmax_t kMaxInputBytes = uintmax_t(1) << 30;
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw InputError({path, 0, 0}, "", "cannot open file (no such file)");
  if (!std::filesystem::is_regular_file(st)) throw InputError({path, 0, 0}, "", "expected a regular file (not a directory, device or pipe)");
  if (std::filesystem::file_size(path, ec) > kMaxInputBytes) throw InputError({path, 0, 0}, "", "file is larger than 1 GiB; expected a config or a log");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "", "cannot open file (permission denied?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace micsim
