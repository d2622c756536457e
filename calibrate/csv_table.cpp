#include "calibrate/csv_table.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "base/config_error.h"
#include "base/json_file.h"

namespace metronome::calibrate {

CsvTable CsvTable::read(const std::string& path) {
  return parse(read_text_file(path, "profile CSV file"), path);
}

CsvTable CsvTable::parse(const std::string& text, const std::string& source) {
  CsvTable t;
  t.source_ = source;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int line = 1, row_line = 1;
  auto end_row = [&]() {
    row.push_back(field);
    field.clear();
    const bool blank = row.size() == 1 && row[0].empty();
    if (!blank) {
      if (t.header_.empty()) {
        // A column named twice: which copy is the measurement? Refused rather than guessed.
        std::set<std::string> seen;
        for (const auto& name : row) {
          if (!seen.insert(name).second) {
            throw ConfigError(source + ":" + std::to_string(row_line) + ": column \"" + name +
                              "\" appears twice in the header; expected each column once");
          }
        }
        t.header_ = row;
      } else if (row.size() != t.header_.size()) {
        throw ConfigError(source + ":" + std::to_string(row_line) + ": " +
                          std::to_string(row.size()) + " fields, the header has " +
                          std::to_string(t.header_.size()));
      } else {
        t.rows_.push_back(row);
        t.lines_.push_back(row_line);
      }
    }
    row.clear();
    any = false;
  };
  // A byte-order mark (spreadsheets write one) is no part of the first column's name.
  const size_t start = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
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
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      end_row();
      row_line = ++line;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (quoted) throw ConfigError(source + ":" + std::to_string(row_line) + ": unterminated quote");
  if (any || !field.empty()) end_row();
  if (t.header_.empty()) throw ConfigError(source + ": empty file (expected a CSV header row)");
  return t;
}

std::optional<size_t> CsvTable::index(const std::string& column) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == column) return i;
  }
  return std::nullopt;
}

size_t CsvTable::require(const std::string& column, const std::string& why) const {
  if (auto i = index(column)) return *i;
  throw ConfigError(source_ + ": column \"" + column + "\" missing (" + why + ")");
}

void CsvTable::fail(size_t row, size_t column, const std::string& expected) const {
  throw ConfigError(source_ + ":" + std::to_string(lines_[row]) + ": column \"" + header_[column] +
                    "\": \"" + rows_[row][column] + "\": expected " + expected);
}

double CsvTable::number(size_t row, size_t column) const {
  const std::string& s = rows_[row][column];
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) {
    fail(row, column, "a finite number");
  }
  return v;
}

int64_t CsvTable::integer(size_t row, size_t column) const {
  const double v = number(row, column);
  if (v != std::floor(v) || std::fabs(v) > 9e15) fail(row, column, "an integer");
  return static_cast<int64_t>(v);
}

bool CsvTable::boolean(size_t row, size_t column) const {
  const std::string& s = rows_[row][column];
  if (s == "True" || s == "true" || s == "1") return true;
  if (s == "False" || s == "false" || s == "0") return false;
  fail(row, column, "True or False");
}

}  // namespace metronome::calibrate
