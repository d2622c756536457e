#include "quality/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace metronome::quality {
namespace {

std::vector<std::string> pieces(const BpeTokenizer& t, const std::string& s) {
  std::vector<std::string> out;
  for (const auto p : t.pretokenize(s)) out.emplace_back(p);
  return out;
}

// A vocabulary of every byte symbol ("Ġ" is the space's) plus merged tokens.
BpeTokenizer toy(bool split_digits) {
  std::vector<std::string> vocab;
  for (int b = 33; b <= 126; ++b) vocab.emplace_back(1, static_cast<char>(b));
  vocab.push_back("\xC4\xA0");  // Ġ: space
  vocab.push_back("\xC4\x8A");  // Ċ: newline
  vocab.push_back("\xC4\xA0t");
  vocab.push_back("he");
  vocab.push_back("\xC4\xA0the");
  vocab.push_back("\xC4\xA0th");
  return BpeTokenizer(vocab, {"\xC4\xA0 t", "\xC4\xA0t h", "h e", "\xC4\xA0th e"}, split_digits);
}

TEST(BpeTokenizer, PreTokenizerFollowsTheGpt2Pattern) {
  const BpeTokenizer t = toy(true);
  EXPECT_EQ(pieces(t, "Hello world"), (std::vector<std::string>{"Hello", " world"}));
  EXPECT_EQ(pieces(t, "don't we'll"), (std::vector<std::string>{"don", "'t", " we", "'ll"}));
  EXPECT_EQ(pieces(t, "a  b"), (std::vector<std::string>{"a", " ", " b"}));
  EXPECT_EQ(pieces(t, "a\n\nThe"), (std::vector<std::string>{"a", "\n", "\n", "The"}));
  EXPECT_EQ(pieces(t, "end.  \n"), (std::vector<std::string>{"end", ".", "  \n"}));
  EXPECT_EQ(pieces(t, "\"_You_\" he"), (std::vector<std::string>{"\"_", "You", "_\"", " he"}));
  // Digits one by one (the smollm pre-tokenizer); the space before a digit stands alone.
  EXPECT_EQ(pieces(t, "in 1813!"), (std::vector<std::string>{"in", " ", "1", "8", "1", "3", "!"}));
  EXPECT_EQ(pieces(toy(false), "in 1813!"), (std::vector<std::string>{"in", " 1813", "!"}));
}

TEST(BpeTokenizer, MergesByRankAndRoundTrips) {
  const BpeTokenizer t = toy(true);
  const auto ids = t.encode(" the");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(t.token_text(ids[0]), " the");
  // The better-ranked " th" wins over "he": "h" is taken before "h e" is considered.
  const auto two = t.encode(" thx");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(t.token_text(two[0]), " th");
  const auto he = t.encode(" he");  // no " h" merge: " " + "he"
  ASSERT_EQ(he.size(), 2u);
  EXPECT_EQ(t.token_text(he[1]), "he");
  const std::string s = "Then the\nheat, 12 he said.";
  EXPECT_EQ(t.decode(t.encode(s)), s);
}

}  // namespace
}  // namespace metronome::quality
