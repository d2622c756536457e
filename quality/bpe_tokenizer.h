// Byte-level BPE (GPT-2 style) built from a GGUF file's tokenizer.ggml.tokens and .merges, with the
// pre-tokenizer of tokenizer.ggml.pre = "smollm" (llama.cpp groups it with StarCoder): every digit
// on its own, then on the rest the GPT-2 pattern
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Bytes are mapped to printable code points by GPT-2's byte-to-unicode table, so a token string
// such as "Ġthe" is " the".
//
// Character classes are exact for ASCII. Beyond ASCII they are an approximation of Unicode's
// \p{L}/\s (Latin, Greek, Cyrillic and CJK letters, the Unicode spaces; everything else is
// punctuation), which is enough for English prose; Pride and Prejudice as fetched is pure ASCII.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace metronome::quality {

class GgufFile;

class BpeTokenizer {
 public:
  // ConfigError unless tokenizer.ggml.model is "gpt2" and tokenizer.ggml.pre is "smollm" (or
  // "gpt2", which differs only in not splitting digits).
  explicit BpeTokenizer(const GgufFile& gguf);
  // For tests: a vocabulary and merges ("a b" strings, best first) in the byte-mapped alphabet.
  BpeTokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
               bool split_digits);

  std::vector<int32_t> encode(std::string_view text) const;
  // The bytes of the tokens (special tokens come out as their names, e.g. "<|im_end|>").
  std::string decode(const std::vector<int32_t>& ids) const;
  std::string token_text(int32_t id) const;
  int32_t vocab_size() const { return static_cast<int32_t>(tokens_.size()); }
  // Id of a token string in the byte-mapped alphabet, -1 if absent.
  int32_t id_of(const std::string& token) const;
  // A control token (tokenizer.ggml.token_type 3: end of text, chat markers).
  bool is_control(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < control_.size() &&
           control_[static_cast<size_t>(id)];
  }

  // The pre-tokenizer's pieces (exposed for tests).
  std::vector<std::string_view> pretokenize(std::string_view text) const;

 private:
  void build(const std::vector<std::string>& merges);
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  std::vector<std::string> tokens_;
  std::vector<bool> control_;
  bool split_digits_ = true;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<std::string, int32_t> ranks_;  // "left right" -> merge rank
  std::string byte_symbol_[256];                    // UTF-8 of each byte's code point
  std::unordered_map<std::string, uint8_t> symbol_byte_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace metronome::quality
