#include "base/json_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/config_error.h"
#include "base/input_files.h"

namespace metronome {
namespace {

// The text of a syntax error, for parse_json_if_json to fall back to a bare string.
struct NotJson {
  std::string message;
};

std::string cut(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

// Builds the DOM through nlohmann's own SAX DOM builder while keeping the path of the value being
// parsed, so that every refusal names the field: one frame per open object or array.
template <class Json>
class StrictSax {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  StrictSax(Json& root, const std::string& where) : dom_(root, true), where_(where) {}

  bool null() { return done(dom_.null()); }
  bool boolean(bool v) { return done(dom_.boolean(v)); }
  bool number_integer(number_integer_t v) { return done(dom_.number_integer(v)); }
  bool number_unsigned(number_unsigned_t v) { return done(dom_.number_unsigned(v)); }
  bool number_float(number_float_t v, const string_t& s) {
    // strtod reads a literal below the least double (1e-400) as 0: not what the text says.
    if (v == 0 && s.substr(0, s.find_first_of("eE")).find_first_of("123456789") != s.npos) {
      throw ConfigError(where_ + (frames_.empty() ? std::string() : ": " + path()) + ": number " +
                        cut(s, 40) +
                        " is too small for a double and would read as 0 (expected 0, or |x| >= "
                        "4.9e-324)");
    }
    return done(dom_.number_float(v, s));
  }
  bool string(string_t& v) { return done(dom_.string(v)); }
  bool binary(binary_t& v) { return done(dom_.binary(v)); }

  bool start_object(std::size_t n) {
    enter(false);
    return dom_.start_object(n);
  }
  bool key(string_t& k) {
    Frame& f = frames_.back();
    f.key = k;
    f.has_key = true;
    if (!f.keys.insert(k).second) {
      throw ConfigError(where_ + ": " + path() +
                        ": duplicate key (give each key once: JSON readers disagree on which "
                        "copy wins)");
    }
    return dom_.key(k);
  }
  bool end_object() {
    const bool ok = dom_.end_object();
    frames_.pop_back();
    return done(ok);
  }
  bool start_array(std::size_t n) {
    enter(true);
    return dom_.start_array(n);
  }
  bool end_array() {
    const bool ok = dom_.end_array();
    frames_.pop_back();
    return done(ok);
  }

  bool parse_error(std::size_t /*position*/, const std::string& token,
                   const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // the lexer's "number overflow": strtod gave +-inf
      throw ConfigError(where_ + (frames_.empty() ? std::string() : ": " + path()) + ": number " +
                        cut(token, 40) +
                        " is out of range (expected a finite number, |x| < 1.8e308)");
    }
    throw NotJson{cut(e.what(), 300)};
  }

 private:
  struct Frame {
    bool array = false;
    size_t index = 0;
    bool has_key = false;
    std::string key;
    std::unordered_set<std::string> keys;
  };

  void enter(bool array) {
    if (static_cast<int>(frames_.size()) >= kMaxJsonDepth) {
      throw ConfigError(where_ + (frames_.empty() ? std::string() : ": " + path()) +
                        ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels (expected at most " + std::to_string(kMaxJsonDepth) + ")");
    }
    frames_.push_back(Frame{array, 0, false, {}, {}});
  }
  // A value is complete: the next one in the enclosing array has the next index, and the enclosing
  // object waits for its next key.
  bool done(bool ok) {
    if (!frames_.empty()) {
      Frame& f = frames_.back();
      if (f.array) {
        ++f.index;
      } else {
        f.has_key = false;
      }
    }
    return ok;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.array) {
        p += "[" + std::to_string(f.index) + "]";
      } else if (f.has_key) {
        p += (p.empty() ? "" : ".") + cut(f.key, 60);
      }
    }
    // A path 64 levels deep is unreadable: its start says where it went wrong.
    return p.empty() ? std::string("the top level") : cut(std::move(p), 120);
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  const std::string& where_;
  std::vector<Frame> frames_;
};

template <class Json>
Json parse_strict(std::string_view text, const std::string& where) {
  Json root;
  StrictSax<Json> sax(root, where);
  Json::sax_parse(text.begin(), text.end(), &sax);
  return root;
}

template <class Json>
std::string preview(const Json& v) {
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " fields";
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " values";
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return cut(std::move(s), 80);
}

}  // namespace

namespace {

// What a non-regular file is, for the message.
const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

void check_mode(const std::string& path, std::string_view what, mode_t m) {
  if (S_ISREG(m)) return;
  if (S_ISDIR(m)) throw ConfigError(path + ": is a directory, expected the " + std::string(what));
  throw ConfigError(path + ": is " + file_kind(m) + ", expected the " + std::string(what) +
                    " as a regular file");
}

}  // namespace

void require_regular_file(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw ConfigError(path + ": cannot open the " + std::string(what) + " (" + std::strerror(err) +
                      ")");
  }
  check_mode(path, what, st.st_mode);
  note_input_file(path, what);
}

std::string read_text_file(const std::string& path, std::string_view what, size_t max_bytes) {
  require_regular_file(path, what);
  // O_NONBLOCK: should the path become a FIFO after the check, open() still returns at once.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw ConfigError(path + ": cannot open the " + std::string(what) + " (" + std::strerror(err) +
                      ")");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw ConfigError(path + ": cannot read the " + std::string(what));
  check_mode(path, what, st.st_mode);
  std::string text;
  std::vector<char> chunk(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      throw ConfigError(path + ": cannot read the " + std::string(what) + " (" +
                        std::strerror(err) + ")");
    }
    if (n == 0) break;
    text.append(chunk.data(), static_cast<size_t>(n));
    if (text.size() > max_bytes) {
      throw ConfigError(path + ": larger than " + std::to_string(max_bytes >> 20) +
                        " MiB, expected a " + std::string(what) + " of at most that size");
    }
  }
  return text;
}

nlohmann::json parse_json(std::string_view text, const std::string& where) {
  try {
    return parse_strict<nlohmann::json>(text, where);
  } catch (const NotJson& e) {
    throw ConfigError(where + ": not valid JSON: " + e.message);
  }
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where) {
  try {
    return parse_strict<nlohmann::ordered_json>(text, where);
  } catch (const NotJson& e) {
    throw ConfigError(where + ": not valid JSON: " + e.message);
  }
}

std::optional<nlohmann::json> parse_json_if_json(std::string_view text, const std::string& where) {
  try {
    return parse_strict<nlohmann::json>(text, where);
  } catch (const NotJson&) {
    return std::nullopt;
  }
}

std::string json_preview(const nlohmann::json& v) { return preview(v); }
std::string argument_preview(const std::string& arg) { return cut(arg, 120); }
std::string json_preview(const nlohmann::ordered_json& v) { return preview(v); }

}  // namespace metronome
