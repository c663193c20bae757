#include "models/io/csv.hpp"

#include <fmt/format.h>

#include "models/io/input_file.hpp"
#include "models/io/input_error.hpp"

namespace micsim {

int CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return int(i);
  return -1;
}

CsvTable parse_csv(const std::string& text, const std::string& file) {
  CsvTable t;
  t.file = file;
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1, quote_line = 0;
  row.line = 1;
  auto end_field = [&] {
    row.fields.push_back(field);
    field.clear();
    field_started = false;
  };
  auto end_row = [&] {
    end_field();
    bool blank = row.fields.size() == 1 && row.fields[0].empty();
    if (!blank) rows.push_back(row);
    row = CsvRow{};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      quoted = true;
      field_started = true;
      quote_line = line;
    } else if (c == ',') {
      end_field();
    } else if (c == '\r') {
      continue;
    } else if (c == '\n') {
      end_row();
      ++line;
      row.line = line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) throw InputError({file, quote_line, 0}, "", "unterminated quoted field");
  if (field_started || !row.fields.empty()) end_row();
  if (rows.empty()) throw InputError({file, 1, 0}, "", "empty CSV file");
  t.header = rows.front().fields;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].fields.size() != t.header.size())
      throw InputError({file, rows[i].line, 0}, "",
                       fmt::format("expected {} fields as in the header, got {}", t.header.size(), rows[i].fields.size()));
    t.rows.push_back(rows[i]);
  }
  return t;
}

CsvTable load_csv(const std::string& path) { return parse_csv(read_whole_file(path), path); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace micsim
