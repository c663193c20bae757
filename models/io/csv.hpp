#pragma once
// A small RFC-4180 CSV reader (quoted fields, "" escapes, CRLF) that keeps line numbers, so errors in
// data files point at the line.
#include <string>
#include <vector>

namespace micsim {

struct CsvRow {
  int line = 0;                     // 1-based line where the row starts
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string file;
  std::vector<std::string> header;
  std::vector<CsvRow> rows;
  int column(const std::string& name) const;  // -1 if absent
};

// Throws InputError (file:line) on an unterminated quote or a row with a different field count.
CsvTable parse_csv(const std::string& text, const std::string& file);
CsvTable load_csv(const std::string& path);

// One field as RFC 4180 writes it: quoted (with "" for ") when it holds a comma, quote or line break.
std::string csv_field(const std::string& s);

}  // namespace micsim
