#pragma once
// Output files are written whole or not at all: write to a temporary in the same directory,
// flush, then rename over the destination. A failed or killed run never leaves half a file.
#include <string>

namespace micsim {
// Writes `content` to `path` atomically; "-" writes to stdout. Throws std::runtime_error on I/O failure.
void write_file_atomically(const std::string& path, const std::string& content);
// Reads a whole file; throws InputError (file, "cannot open") when it cannot.
std::string read_whole_file(const std::string& path);
}  // namespace micsim
