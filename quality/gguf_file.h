// A GGUF file (llama.cpp's model container, version 2 or 3) read into memory: its key-value
// metadata and its tensor directory, with each tensor dequantized to float on request.
//
// Layout (little-endian): "GGUF", u32 version, u64 tensor_count, u64 kv_count; kv_count entries
// (string key, u32 value type, value); tensor_count entries (string name, u32 n_dims, u64 dims[n],
// u32 ggml type, u64 offset); padding to general.alignment (default 32); tensor data, each tensor
// at its offset from the start of the data. A string is a u64 length and bytes; an array is a u32
// element type, a u64 count and the elements. dims[0] is the fastest-varying (a row's length).
//
// Every malformed or unexpected field throws ConfigError naming the file, the field and what was
// expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "quality/ggml_blocks.h"

namespace metronome::quality {

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // dims[0] fastest
  uint32_t type = 0;          // ggml_type code
  uint64_t offset = 0;        // from the start of the tensor data
  int64_t values() const;
};

class GgufFile {
 public:
  using Value = std::variant<int64_t, double, bool, std::string, std::vector<std::string>,
                             std::vector<int64_t>, std::vector<double>>;

  explicit GgufFile(const std::string& path);

  const std::string& path() const { return path_; }
  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  // Typed metadata; a missing key or another type is a ConfigError.
  int64_t integer(const std::string& key) const;
  double real(const std::string& key) const;  // float32/float64 (integers accepted)
  const std::string& string(const std::string& key) const;
  const std::vector<std::string>& strings(const std::string& key) const;
  const std::vector<int64_t>& integers(const std::string& key) const;

  bool has_tensor(const std::string& name) const { return tensors_.count(name) != 0; }
  const GgufTensor& tensor(const std::string& name) const;
  // The tensor as floats, row-major with dims[0] fastest; its dims must equal `dims` (ConfigError).
  std::vector<float> floats(const std::string& name, const std::vector<int64_t>& dims) const;
  // The same tensor's blocks as codes (ggml_blocks.h), one per 32 values in the same order; empty
  // when its type has none (F32, F16).
  std::vector<BlockCodes> codes(const std::string& name, const std::vector<int64_t>& dims) const;
  const std::map<std::string, GgufTensor>& tensors() const { return tensors_; }

 private:
  // The tensor, its dims equal to `dims` and its type readable (ConfigError otherwise).
  const GgufTensor& checked(const std::string& name, const std::vector<int64_t>& dims) const;

  std::string path_;
  std::vector<std::byte> bytes_;
  size_t data_start_ = 0;
  std::map<std::string, Value> kv_;
  std::map<std::string, GgufTensor> tensors_;
};

}  // namespace metronome::quality
