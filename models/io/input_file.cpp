#include "models/io/input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "models/io/input_error.hpp"

namespace micsim {

namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 if it is not valid (overlong forms, surrogates
// and code points past U+10FFFF are invalid, as RFC 3629 says).
size_t utf8_sequence(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

bool is_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void check_utf8(const std::string& text, const std::string& shown_name) {
  int line = 1, column = 1;
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_sequence(text, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[i]));
      throw InputError({shown_name, line, column}, "",
                       std::string("not UTF-8 text: byte ") + hex + " does not start a valid UTF-8 character");
    }
    if (text[i] == '\n') ++line, column = 1;
    else ++column;
    i += n;
  }
}

std::string shorten_for_message(const std::string& s) {
  // Control characters are shown escaped: a value must not break a message over lines.
  auto visible = [](const std::string& v) {
    std::string out;
    for (char c : v) {
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      else out += c;
    }
    return out;
  };
  constexpr size_t kMax = 60;
  if (s.size() <= kMax) return visible(s);
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return visible(s.substr(0, cut)) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string read_whole_file(const std::string& path) {
  // Only regular files: a path like /dev/zero or a FIFO given by mistake would otherwise hang or
  // fill memory. Inputs here are configs and logs; 1 GiB is far above any real one.
  constexpr off_t kMaxInputBytes = off_t(1) << 30;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw InputError({path, 0, 0}, "", std::string("cannot open file: ") + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) throw InputError({path, 0, 0}, "", "is a directory; expected a file");
  if (!S_ISREG(st.st_mode)) throw InputError({path, 0, 0}, "", "expected a regular file (not a device, pipe or socket)");
  if (st.st_size > kMaxInputBytes) throw InputError({path, 0, 0}, "", "file is larger than 1 GiB; expected a config or a log");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw InputError({path, 0, 0}, "", std::string("cannot open file: ") + std::strerror(err));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  check_utf8(text, path);
  return text;
}

}  // namespace micsim
