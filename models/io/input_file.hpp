#pragma once
// Reading the files a user gives micsim: regular files only (never /dev/zero or a FIFO), of a sane
// size, in UTF-8. Every refusal is an InputError naming the file (and line:column for bad bytes).
#include <string>

namespace micsim {

// Reads a whole file; throws InputError (file, reason) when it cannot or when it is not UTF-8 text.
std::string read_whole_file(const std::string& path);

// Throws InputError at file:line:column of the first byte sequence that is not UTF-8.
void check_utf8(const std::string& text, const std::string& shown_name);

// True when `s` is valid UTF-8 (command-line arguments, CSV fields).
bool is_utf8(const std::string& s);

// A user's value in a message: at most ~60 characters, the rest elided (a 4 MB value is not echoed).
std::string shorten_for_message(const std::string& s);

}  // namespace micsim
