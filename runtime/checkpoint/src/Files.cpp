//===- Files.cpp - Durable file writes and checked reads -------------------===//

#include "cleave/runtime/checkpoint/Files.h"

#include "absl/strings/str_cat.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

namespace cleave::checkpoint {

namespace {

std::string errnoText(int code) { return std::strerror(code); }

absl::Status ioError(int code, const std::string &message) {
  if (code == ENOSPC || code == EDQUOT)
    return absl::ResourceExhaustedError(message);
  if (code == EACCES || code == EPERM || code == EROFS)
    return absl::PermissionDeniedError(message);
  if (code == ENOENT)
    return absl::NotFoundError(message);
  return absl::InternalError(message);
}

std::string parentOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

absl::StatusOr<OutputFile> OutputFile::create(const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int code = errno;
    return ioError(code, absl::StrCat(path, ": cannot create: ",
                                      errnoText(code)));
  }
  return OutputFile(fd, path);
}

OutputFile::OutputFile(OutputFile &&other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), size_(other.size_) {
  other.fd_ = -1;
}

OutputFile &OutputFile::operator=(OutputFile &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

absl::Status OutputFile::append(const void *data, int64_t bytes,
                                const std::string &what) {
  const char *p = static_cast<const char *>(data);
  int64_t left = bytes;
  while (left > 0) {
    ssize_t n = ::write(fd_, p, static_cast<size_t>(std::min<int64_t>(
                                    left, int64_t(1) << 30)));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int code = n < 0 ? errno : EIO;
      return ioError(code, absl::StrCat(path_, ": writing ", what, " (", bytes,
                                        " bytes at offset ", size_, "): ",
                                        errnoText(code)));
    }
    p += n;
    left -= n;
  }
  size_ += bytes;
  return absl::OkStatus();
}

absl::Status OutputFile::sync() {
  if (fd_ < 0)
    return absl::OkStatus();
  int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    int code = errno;
    ::close(fd);
    return ioError(code, absl::StrCat(path_, ": fsync: ", errnoText(code)));
  }
  if (::close(fd) != 0) {
    int code = errno;
    return ioError(code, absl::StrCat(path_, ": close: ", errnoText(code)));
  }
  return absl::OkStatus();
}

absl::Status syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int code = errno;
    return ioError(code, absl::StrCat(dir, ": cannot open the directory: ",
                                      errnoText(code)));
  }
  int rc = ::fsync(fd);
  int code = errno;
  ::close(fd);
  // Some file systems refuse fsync on directories; their renames are then
  // as durable as they get.
  if (rc != 0 && code != EINVAL && code != EROFS)
    return ioError(code, absl::StrCat(dir, ": fsync: ", errnoText(code)));
  return absl::OkStatus();
}

absl::Status replaceFileAtomically(const std::string &path,
                                   const std::string &bytes) {
  std::string temp = path + ".tmp";
  {
    absl::StatusOr<OutputFile> out = OutputFile::create(temp);
    if (!out.ok())
      return out.status();
    if (absl::Status s = out->append(bytes.data(), bytes.size(), "its contents");
        !s.ok()) {
      ::unlink(temp.c_str());
      return s;
    }
    if (absl::Status s = out->sync(); !s.ok()) {
      ::unlink(temp.c_str());
      return s;
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int code = errno;
    ::unlink(temp.c_str());
    return ioError(code, absl::StrCat(path, ": cannot rename ", temp,
                                      " into place: ", errnoText(code)));
  }
  return syncDirectory(parentOf(path));
}

absl::StatusOr<std::string> readWholeFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int code = errno;
    return ioError(code, absl::StrCat(path, ": cannot open: ", errnoText(code)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a file"));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  int64_t done = 0;
  while (done < st.st_size) {
    ssize_t n = ::pread(fd, out.data() + done, st.st_size - done, done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += n;
  }
  ::close(fd);
  out.resize(done);
  return out;
}

absl::Status readAt(const std::string &path, int64_t offset, int64_t bytes,
                    void *dst, const std::string &what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int code = errno;
    return ioError(code, absl::StrCat(path, ": cannot open (", errnoText(code),
                                      "); it holds ", what));
  }
  char *p = static_cast<char *>(dst);
  int64_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd, p + done, static_cast<size_t>(std::min<int64_t>(
                                          bytes - done, int64_t(1) << 30)),
                        offset + done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int code = errno;
      ::close(fd);
      return ioError(code, absl::StrCat(path, ": reading ", what, ": ",
                                        errnoText(code)));
    }
    if (n == 0)
      break;
    done += n;
  }
  ::close(fd);
  if (done < bytes)
    return absl::DataLossError(absl::StrCat(
        path, ": truncated: ", what, " needs bytes ", offset, "-",
        offset + bytes, " but the file ends at ", offset + done));
  return absl::OkStatus();
}

uint64_t hashBytes(const void *data, int64_t bytes) {
  return XXH3_64bits(data, static_cast<size_t>(bytes));
}

} // namespace cleave::checkpoint
