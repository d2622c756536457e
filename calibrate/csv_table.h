// A small CSV reader for measured profiles: a header row, then rows of the same width; fields may
// be double-quoted (a quote inside doubled). Every error names the file, the line and the column.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace metronome::calibrate {

class CsvTable {
 public:
  // ConfigError: unreadable file, empty file, a row of another width, an unterminated quote.
  static CsvTable read(const std::string& path);
  static CsvTable parse(const std::string& text, const std::string& source);

  const std::string& source() const { return source_; }
  size_t rows() const { return rows_.size(); }
  bool has(const std::string& column) const { return index(column).has_value(); }
  // ConfigError naming the file and the missing column (and what it is for) when absent.
  size_t require(const std::string& column, const std::string& why) const;
  const std::string& cell(size_t row, size_t column) const { return rows_[row][column]; }
  int line(size_t row) const { return lines_[row]; }  // 1-based line in the file
  // ConfigError naming file, line, column and the text when the cell is not a finite number.
  double number(size_t row, size_t column) const;
  int64_t integer(size_t row, size_t column) const;
  bool boolean(size_t row, size_t column) const;  // True/False/true/false/1/0
  bool empty_cell(size_t row, size_t column) const { return rows_[row][column].empty(); }
  const std::vector<std::string>& header() const { return header_; }

 private:
  std::optional<size_t> index(const std::string& column) const;
  [[noreturn]] void fail(size_t row, size_t column, const std::string& expected) const;

  std::string source_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

}  // namespace metronome::calibrate
