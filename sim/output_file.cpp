#include "sim/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "sim/config_error.h"

namespace metronome {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 16;

std::string reason(int err) { return std::strerror(err); }

}  // namespace

OutputFile::OutputFile(const std::string& path, std::string_view what) : path_(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw ConfigError(std::string(what) + " " + path + ": is a directory, expected a file path");
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    throw ConfigError(std::string(what) + " " + path + ": cannot open for writing (" + reason(err) +
                      "); expected a writable file path");
  }
  buf_.reserve(kBufferBytes);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);  // an unfinished file: the error that unwound us is what matters
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : fd_(o.fd_), path_(std::move(o.path_)), buf_(std::move(o.buf_)) {
  o.fd_ = -1;
}

OutputFile& OutputFile::operator=(OutputFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    buf_ = std::move(o.buf_);
    o.fd_ = -1;
  }
  return *this;
}

void OutputFile::fail(const char* op, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buf_.clear();
  throw IoError("cannot " + std::string(op) + " " + path_ + ": " + reason(err));
}

void OutputFile::write(std::string_view s) {
  if (fd_ < 0) throw IoError("cannot write " + path_ + ": the file is closed");
  buf_.append(s);
  if (buf_.size() >= kBufferBytes) flush();
}

void OutputFile::flush() {
  if (fd_ < 0) return;
  size_t done = 0;
  while (done < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    if (n == 0) fail("write", ENOSPC);
    done += static_cast<size_t>(n);
  }
  buf_.clear();
}

void OutputFile::close() {
  if (fd_ < 0) return;
  flush();
  // fsync reports deferred write errors (NFS, a full thin volume); EINVAL: a pipe or a device.
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail("sync", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    throw IoError("cannot close " + path_ + ": " + reason(err));
  }
}

void write_file_atomically(const std::string& path, std::string_view text, std::string_view what) {
  const std::string tmp = path + ".tmp";
  try {
    OutputFile f(tmp, what);
    f.write(text);
    f.close();
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw IoError("cannot rename " + tmp + " to " + path + ": " + reason(err));
  }
}

bool stdout_ok() {
  std::cout.flush();
  const bool ok = !std::cout.fail() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  return ok;
}

}  // namespace metronome
