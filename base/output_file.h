// Writing outputs so that a failing disk is an error, never a silent truncation. Every write and
// the close are checked (a full disk often shows only at close); a file that must appear whole is
// written to a temporary name and renamed over the target only after its close succeeded, so a
// failed write never replaces a good file.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace metronome {

// A write, flush or close failed (disk full, I/O error): the path and the system's reason.
// Not a ConfigError: the input was fine, the machine was not (exit 1, not 2).
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file streamed in pieces (a CSV growing with the run). Opening fails with a ConfigError naming
// the path (a directory given as a file, a missing or read-only folder); writes are buffered, and
// the first failing write, flush or close throws IoError. A file never closed is left as it was.
class OutputFile {
 public:
  OutputFile() = default;
  // `what` names the option or role for messages: "--trace", "timeseries.csv".
  // ConfigError also for a FIFO that no process reads (open() would block forever) and for a file
  // this run reads as an input (base/input_files.h).
  OutputFile(const std::string& path, std::string_view what);
  // Takes over an open descriptor (write_file_atomically's locked temporary file).
  OutputFile(int fd, const std::string& path);
  ~OutputFile();
  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&& o) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  void write(std::string_view s);
  OutputFile& operator<<(std::string_view s) {
    write(s);
    return *this;
  }
  void flush();  // hands the buffer to the kernel
  void sync();   // fsync what was flushed; IoError when it fails
  void close();  // flush, fsync and close; IoError when any of them fails

 private:
  [[noreturn]] void fail(const char* op, int err);
  int fd_ = -1;
  std::string path_;
  std::string buf_;
};

// Writes `text` to `path` whole: to a temporary file beside it (`path`.tmp, locked while written,
// so a second writer is refused with a ConfigError rather than sharing it), checked and synced,
// then renamed over `path`. On any failure the temporary file is removed, `path` is untouched, and
// IoError (or ConfigError when the folder cannot be written at all) is thrown. A `path` that exists
// and is not a regular file (a device, a FIFO, a folder), or is an input of this run, is refused
// with a ConfigError before anything is written: renaming over /dev/null as root would replace the
// device.
void require_writable_target(const std::string& path, std::string_view what);
void write_file_atomically(const std::string& path, std::string_view text, std::string_view what);

// Flushes stdout and reports whether everything written there reached it (stdout to /dev/full
// must not exit 0).
bool stdout_ok();

}  // namespace metronome
