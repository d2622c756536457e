#include "base/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "base/config_error.h"
#include "base/input_files.h"

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
  refuse_input_as_output(path, std::string(what) + " " + path);
  // O_NONBLOCK: a FIFO that no process reads would block open() forever; it fails with ENXIO.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENXIO) {
      throw ConfigError(std::string(what) + " " + path +
                        ": a FIFO (named pipe) that no process is reading; expected a regular "
                        "file path");
    }
    throw ConfigError(std::string(what) + " " + path + ": cannot open for writing (" + reason(err) +
                      "); expected a writable file path");
  }
  // Writes block as usual from here (a pipe with a slow reader is waited for).
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  buf_.reserve(kBufferBytes);
}

OutputFile::OutputFile(int fd, const std::string& path) : fd_(fd), path_(path) {
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

void OutputFile::sync() {
  if (fd_ < 0) return;
  // fsync reports deferred write errors (NFS, a full thin volume); EINVAL: a pipe or a device.
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail("sync", errno);
}

void OutputFile::close() {
  if (fd_ < 0) return;
  flush();
  sync();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    throw IoError("cannot close " + path_ + ": " + reason(err));
  }
}

void require_writable_target(const std::string& path, std::string_view what) {
  refuse_input_as_output(path, std::string(what) + " " + path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw ConfigError(std::string(what) + " " + path + ": is " + kind +
                    ", expected a regular file path (it is written whole and renamed into place)");
}

void write_file_atomically(const std::string& path, std::string_view text, std::string_view what) {
  // Renaming over a device node (as root, --out /dev/null) would replace it, and over a folder
  // fails late: the target must be a regular file or absent.
  require_writable_target(path, what);
  // One writer per target: the temporary file is locked while it is written, and a second writer
  // (another process, or a thread of this one) is refused instead of writing into the same
  // temporary file. The lock is taken on the file the name still points to, so a writer that
  // opened it just before the first one renamed or removed it tries again on a fresh file.
  const std::string tmp = path + ".tmp";
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0) {
      const int err = errno;
      throw ConfigError(std::string(what) + " " + tmp + ": cannot open for writing (" +
                        reason(err) + "); expected a writable folder");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      throw ConfigError(std::string(what) + " " + path +
                        ": another process is writing this file (" + tmp + " is locked)");
    }
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(tmp.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      break;
    }
    ::close(fd);
    fd = -1;
    if (attempt == 10) {
      throw ConfigError(std::string(what) + " " + path + ": another process is writing this file");
    }
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw IoError("cannot truncate " + tmp + ": " + reason(err));
  }
  try {
    OutputFile f(fd, tmp);
    f.write(text);
    // Renamed while still open and locked: no other writer can take the name in between.
    f.flush();
    f.sync();
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      throw IoError("cannot rename " + tmp + " to " + path + ": " + reason(err));
    }
    f.close();
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

bool stdout_ok() {
  std::cout.flush();
  const bool ok = !std::cout.fail() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  return ok;
}

}  // namespace metronome
