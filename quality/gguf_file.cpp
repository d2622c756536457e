#include "quality/gguf_file.h"

#include <cstring>
#include <fstream>
#include <span>

#include "base/config_error.h"
#include "base/json_file.h"

namespace metronome::quality {

int64_t GgufTensor::values() const {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Sequential reader over the header with bounds checks.
class Cursor {
 public:
  Cursor(const std::vector<std::byte>& b, const std::string& path) : b_(b), path_(path) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(path_ + ": byte " + std::to_string(o_) + ": " + what);
  }
  template <typename T>
  T pod(const char* what) {
    if (o_ + sizeof(T) > b_.size()) fail(std::string("file ends inside ") + what);
    T v;
    std::memcpy(&v, b_.data() + o_, sizeof(T));
    o_ += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const auto n = pod<uint64_t>(what);
    if (n > b_.size() - o_)
      fail(std::string("string length ") + std::to_string(n) + " of " + what +
           " runs past the end of the file");
    std::string s(reinterpret_cast<const char*>(b_.data() + o_), n);
    o_ += n;
    return s;
  }
  size_t offset() const { return o_; }

 private:
  const std::vector<std::byte>& b_;
  const std::string& path_;
  size_t o_ = 0;
};

// GGUF value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array,
// 10 u64, 11 i64, 12 f64.
int64_t read_int(Cursor& c, uint32_t t, const std::string& key) {
  switch (t) {
    case 0:
      return c.pod<uint8_t>(key.c_str());
    case 1:
      return c.pod<int8_t>(key.c_str());
    case 2:
      return c.pod<uint16_t>(key.c_str());
    case 3:
      return c.pod<int16_t>(key.c_str());
    case 4:
      return c.pod<uint32_t>(key.c_str());
    case 5:
      return c.pod<int32_t>(key.c_str());
    case 10:
      return static_cast<int64_t>(c.pod<uint64_t>(key.c_str()));
    case 11:
      return c.pod<int64_t>(key.c_str());
    default:
      c.fail(key + ": value type " + std::to_string(t) + " is not an integer");
  }
}

bool is_int_type(uint32_t t) { return t <= 5 || t == 10 || t == 11; }

GgufFile::Value read_value(Cursor& c, uint32_t t, const std::string& key) {
  if (is_int_type(t)) return read_int(c, t, key);
  if (t == 6) return double{c.pod<float>(key.c_str())};
  if (t == 12) return c.pod<double>(key.c_str());
  if (t == 7) return c.pod<uint8_t>(key.c_str()) != 0;
  if (t == 8) return c.str(key.c_str());
  if (t != 9) c.fail(key + ": unknown value type " + std::to_string(t) + ", expected 0-12");
  const auto et = c.pod<uint32_t>(key.c_str());
  const auto n = c.pod<uint64_t>(key.c_str());
  if (n > (1u << 26)) c.fail(key + ": array of " + std::to_string(n) + " elements is implausible");
  if (et == 8) {
    std::vector<std::string> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.push_back(c.str(key.c_str()));
    return v;
  }
  if (is_int_type(et) || et == 7) {
    std::vector<int64_t> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      v.push_back(et == 7 ? int64_t{c.pod<uint8_t>(key.c_str())} : read_int(c, et, key));
    }
    return v;
  }
  if (et == 6 || et == 12) {
    std::vector<double> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      v.push_back(et == 6 ? double{c.pod<float>(key.c_str())} : c.pod<double>(key.c_str()));
    }
    return v;
  }
  c.fail(key + ": arrays of value type " + std::to_string(et) + " are not supported");
}

}  // namespace

GgufFile::GgufFile(const std::string& path) : path_(path) {
  require_regular_file(path, "GGUF model file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw ConfigError(path + ": cannot open the GGUF model file");
  const auto size = static_cast<size_t>(in.tellg());
  bytes_.resize(size);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes_.data()), static_cast<std::streamsize>(size));
  if (!in) throw ConfigError(path + ": read failed");

  Cursor c(bytes_, path_);
  const auto magic = c.pod<uint32_t>("magic");
  if (magic != 0x46554747u) c.fail("magic is not \"GGUF\"");
  const auto version = c.pod<uint32_t>("version");
  if (version != 2 && version != 3) {
    c.fail("version " + std::to_string(version) + ", expected 2 or 3");
  }
  const auto n_tensors = c.pod<uint64_t>("tensor_count");
  const auto n_kv = c.pod<uint64_t>("kv_count");
  if (n_tensors > 100000 || n_kv > 100000) c.fail("tensor or kv count is implausible");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.str("metadata key");
    const auto t = c.pod<uint32_t>(key.c_str());
    kv_[key] = read_value(c, t, key);
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = c.str("tensor name");
    const auto nd = c.pod<uint32_t>(t.name.c_str());
    if (nd < 1 || nd > 4) c.fail(t.name + ": " + std::to_string(nd) + " dims, expected 1-4");
    for (uint32_t d = 0; d < nd; ++d) {
      const auto v = c.pod<uint64_t>(t.name.c_str());
      if (v < 1 || v > (uint64_t{1} << 32)) c.fail(t.name + ": dim " + std::to_string(v));
      t.dims.push_back(static_cast<int64_t>(v));
    }
    t.type = c.pod<uint32_t>(t.name.c_str());
    t.offset = c.pod<uint64_t>(t.name.c_str());
    tensors_[t.name] = std::move(t);
  }
  const int64_t align = has("general.alignment") ? integer("general.alignment") : 32;
  if (align < 1 || align > 4096)
    throw ConfigError(path + ": general.alignment " + std::to_string(align) + ", expected 1-4096");
  data_start_ = (c.offset() + static_cast<size_t>(align) - 1) / static_cast<size_t>(align) *
                static_cast<size_t>(align);
  for (const auto& [name, t] : tensors_) {
    if (!ggml_type_supported(t.type)) continue;  // reported when (if) the tensor is read
    const auto bytes = static_cast<uint64_t>(ggml_bytes(static_cast<GgmlType>(t.type), t.values()));
    if (data_start_ + t.offset + bytes > bytes_.size()) {
      throw ConfigError(path + ": tensor " + name + " (" + std::to_string(bytes) +
                        " bytes at offset " + std::to_string(t.offset) +
                        ") runs past the end of the file");
    }
  }
}

int64_t GgufFile::integer(const std::string& key) const {
  const auto it = kv_.find(key);
  if (it == kv_.end()) throw ConfigError(path_ + ": metadata " + key + " is missing");
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  throw ConfigError(path_ + ": metadata " + key + " is not an integer");
}

double GgufFile::real(const std::string& key) const {
  const auto it = kv_.find(key);
  if (it == kv_.end()) throw ConfigError(path_ + ": metadata " + key + " is missing");
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  throw ConfigError(path_ + ": metadata " + key + " is not a number");
}

const std::string& GgufFile::string(const std::string& key) const {
  const auto it = kv_.find(key);
  if (it == kv_.end()) throw ConfigError(path_ + ": metadata " + key + " is missing");
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  throw ConfigError(path_ + ": metadata " + key + " is not a string");
}

const std::vector<std::string>& GgufFile::strings(const std::string& key) const {
  const auto it = kv_.find(key);
  if (it == kv_.end()) throw ConfigError(path_ + ": metadata " + key + " is missing");
  if (const auto* v = std::get_if<std::vector<std::string>>(&it->second)) return *v;
  throw ConfigError(path_ + ": metadata " + key + " is not an array of strings");
}

const std::vector<int64_t>& GgufFile::integers(const std::string& key) const {
  const auto it = kv_.find(key);
  if (it == kv_.end()) throw ConfigError(path_ + ": metadata " + key + " is missing");
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  throw ConfigError(path_ + ": metadata " + key + " is not an array of integers");
}

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw ConfigError(path_ + ": tensor " + name + " is missing");
  return it->second;
}

std::vector<BlockCodes> GgufFile::codes(const std::string& name,
                                        const std::vector<int64_t>& dims) const {
  const GgufTensor& t = checked(name, dims);
  const auto type = static_cast<GgmlType>(t.type);
  if (!has_block_codes(type)) return {};
  std::vector<BlockCodes> out(static_cast<size_t>(t.values() / 32));
  const auto bytes = static_cast<size_t>(ggml_bytes(type, t.values()));
  block_codes(type, std::span<const std::byte>(bytes_.data() + data_start_ + t.offset, bytes), out);
  return out;
}

const GgufTensor& GgufFile::checked(const std::string& name,
                                    const std::vector<int64_t>& dims) const {
  const GgufTensor& t = tensor(name);
  if (t.dims != dims) {
    throw ConfigError(path_ + ": tensor " + name + " has dims " + dims_text(t.dims) +
                      ", expected " + dims_text(dims));
  }
  if (!ggml_type_supported(t.type)) {
    throw ConfigError(path_ + ": tensor " + name + " is " + ggml_type_name(t.type) +
                      ", expected F32, F16, Q4_0, Q4_1 or Q8_0");
  }
  return t;
}

std::vector<float> GgufFile::floats(const std::string& name,
                                    const std::vector<int64_t>& dims) const {
  const GgufTensor& t = checked(name, dims);
  const auto type = static_cast<GgmlType>(t.type);
  std::vector<float> out(static_cast<size_t>(t.values()));
  const auto bytes = static_cast<size_t>(ggml_bytes(type, t.values()));
  dequantize(type, std::span<const std::byte>(bytes_.data() + data_start_ + t.offset, bytes), out);
  return out;
}

}  // namespace metronome::quality
