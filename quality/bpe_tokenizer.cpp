#include "quality/bpe_tokenizer.h"

#include <limits>

#include "base/config_error.h"
#include "quality/gguf_file.h"

namespace metronome::quality {

namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Decodes one code point at s[i]; returns its byte length (1 for a malformed byte, taken as is).
size_t next_cp(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    cp = b;
    return 1;
  }
  cp = n == 1 ? b : n == 2 ? (b & 0x1Fu) : n == 3 ? (b & 0x0Fu) : (b & 0x07u);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 2) {
      cp = b;
      return 1;
    }
    cp = cp << 6 | (c & 0x3Fu);
  }
  return n;
}

enum class Cls { kLetter, kDigit, kSpace, kOther };

Cls classify(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return Cls::kLetter;
    if (cp >= '0' && cp <= '9') return Cls::kDigit;
    if (cp == ' ' || (cp >= 9 && cp <= 13)) return Cls::kSpace;
    return Cls::kOther;
  }
  if (cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
      cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000) {
    return Cls::kSpace;
  }
  if (cp == 0xAA || cp == 0xB5 || cp == 0xBA ||
      (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7)) {
    return Cls::kLetter;
  }
  if ((cp >= 0x370 && cp <= 0x52F) || (cp >= 0x3040 && cp <= 0x9FFF) ||
      (cp >= 0xAC00 && cp <= 0xD7A3)) {
    return Cls::kLetter;
  }
  return Cls::kOther;
}

}  // namespace

BpeTokenizer::BpeTokenizer(const GgufFile& gguf) {
  const std::string& model = gguf.string("tokenizer.ggml.model");
  if (model != "gpt2") {
    throw ConfigError(gguf.path() + ": tokenizer.ggml.model is \"" + model +
                      "\", expected \"gpt2\" (byte-level BPE)");
  }
  const std::string pre =
      gguf.has("tokenizer.ggml.pre") ? gguf.string("tokenizer.ggml.pre") : std::string("gpt2");
  if (pre != "smollm" && pre != "gpt2") {
    throw ConfigError(gguf.path() + ": tokenizer.ggml.pre is \"" + pre +
                      "\", expected \"smollm\" or \"gpt2\"");
  }
  split_digits_ = pre == "smollm";
  tokens_ = gguf.strings("tokenizer.ggml.tokens");
  if (gguf.has("tokenizer.ggml.token_type")) {
    const auto& types = gguf.integers("tokenizer.ggml.token_type");
    if (types.size() != tokens_.size()) {
      throw ConfigError(gguf.path() + ": tokenizer.ggml.token_type has " +
                        std::to_string(types.size()) + " entries, expected one per token (" +
                        std::to_string(tokens_.size()) + ")");
    }
    for (const int64_t t : types) control_.push_back(t == 3);
  }
  build(gguf.strings("tokenizer.ggml.merges"));
}

BpeTokenizer::BpeTokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
                           bool split_digits)
    : tokens_(std::move(tokens)), split_digits_(split_digits) {
  build(merges);
}

void BpeTokenizer::build(const std::vector<std::string>& merges) {
  // GPT-2's table: printable Latin-1 bytes map to themselves, the other 68 to 256, 257, ...
  uint32_t extra = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    byte_symbol_[b] = utf8(printable ? b : extra++);
    symbol_byte_[byte_symbol_[b]] = static_cast<uint8_t>(b);
  }
  for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], static_cast<int32_t>(i));
  for (size_t i = 0; i < merges.size(); ++i) {
    ranks_.emplace(merges[i], static_cast<int32_t>(i));
  }
}

int32_t BpeTokenizer::id_of(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

std::vector<std::string_view> BpeTokenizer::pretokenize(std::string_view text) const {
  std::vector<std::string_view> out;
  // Code points with their classes; a digit is its own span when split_digits_.
  std::vector<size_t> at;  // byte offset of each code point, plus the end
  std::vector<Cls> cls;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp;
    const size_t n = next_cp(text, i, cp);
    at.push_back(i);
    cls.push_back(classify(cp));
    i += n;
  }
  at.push_back(text.size());
  const size_t n = cls.size();
  auto piece = [&](size_t a, size_t b) { out.push_back(text.substr(at[a], at[b] - at[a])); };
  auto run = [&](size_t i, size_t end, Cls c) {
    while (i < end && cls[i] == c) ++i;
    return i;
  };
  size_t span_begin = 0;
  while (span_begin < n) {
    if (split_digits_ && cls[span_begin] == Cls::kDigit) {
      piece(span_begin, span_begin + 1);
      ++span_begin;
      continue;
    }
    size_t end = span_begin;
    while (end < n && !(split_digits_ && cls[end] == Cls::kDigit)) ++end;
    // GPT-2's alternation, tried in order at each position of [span_begin, end).
    for (size_t i = span_begin; i < end;) {
      const char c = text[at[i]];
      if (c == '\'' && i + 1 < end) {
        const char c1 = text[at[i + 1]];
        const char c2 = i + 2 < end ? text[at[i + 2]] : '\0';
        size_t len = 0;
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') len = 2;
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
          len = 3;
        }
        if (len) {
          piece(i, i + len);
          i += len;
          continue;
        }
      }
      const bool lead_space = c == ' ' && i + 1 < end && cls[i + 1] != Cls::kSpace;
      const size_t body = lead_space ? i + 1 : i;
      const Cls k = cls[body];
      if (k != Cls::kSpace) {
        const size_t j = run(body, end, k);
        piece(i, j);
        i = j;
        continue;
      }
      // \s+(?!\S): a whitespace run, less its last character when a non-space follows (that
      // character then starts the next piece); a single one before a non-space is \s+.
      const size_t j = run(i, end, Cls::kSpace);
      const size_t stop = (j < end && j - i >= 2) ? j - 1 : j;
      piece(i, stop);
      i = stop;
    }
    span_begin = end;
  }
  return out;
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  const std::string key(piece);
  if (const auto it = cache_.find(key); it != cache_.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  std::vector<std::string> sym;
  for (const char ch : piece) sym.push_back(byte_symbol_[static_cast<unsigned char>(ch)]);
  // Merge the best-ranked adjacent pair, all its occurrences left to right, until none is ranked.
  while (sym.size() > 1) {
    int32_t best = std::numeric_limits<int32_t>::max();
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      const auto it = ranks_.find(sym[i] + " " + sym[i + 1]);
      if (it != ranks_.end() && it->second < best) best = it->second;
    }
    if (best == std::numeric_limits<int32_t>::max()) break;
    std::vector<std::string> next;
    for (size_t i = 0; i < sym.size(); ++i) {
      if (i + 1 < sym.size()) {
        const auto it = ranks_.find(sym[i] + " " + sym[i + 1]);
        if (it != ranks_.end() && it->second == best) {
          next.push_back(sym[i] + sym[i + 1]);
          ++i;
          continue;
        }
      }
      next.push_back(sym[i]);
    }
    sym = std::move(next);
  }
  std::vector<int32_t> ids;
  for (const auto& s : sym) {
    const int32_t id = id_of(s);
    if (id < 0) throw ConfigError("tokenizer: symbol \"" + s + "\" is not in the vocabulary");
    ids.push_back(id);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  cache_.emplace(key, std::move(ids));
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  for (const auto piece : pretokenize(text)) encode_piece(piece, out);
  return out;
}

std::string BpeTokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw std::out_of_range("tokenizer: id " + std::to_string(id) + " outside the vocabulary");
  }
  const std::string& t = tokens_[static_cast<size_t>(id)];
  std::string bytes;
  for (size_t i = 0; i < t.size();) {
    uint32_t cp;
    const size_t n = next_cp(t, i, cp);
    const auto it = symbol_byte_.find(t.substr(i, n));
    if (it == symbol_byte_.end()) return t;  // a special token, e.g. <|im_end|>: kept as named
    bytes += static_cast<char>(it->second);
    i += n;
  }
  return bytes;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  for (const int32_t id : ids) s += token_text(id);
  return s;
}

}  // namespace metronome::quality
