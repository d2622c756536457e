// The strict JSON reader: every refusal names the file and the field, and nothing it refuses can
// crash or mislead a later step (a duplicate key, 1e309, deep nesting, a huge file).
#include "base/json_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/config_error.h"
#include "base/json_section.h"

namespace metronome {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json(text, "f.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonFile, AcceptsOrdinaryJson) {
  const auto j = parse_json(R"({"a": {"b": [1, 2.5, "x", null, true]}, "c": -3})", "f.json");
  EXPECT_EQ(j["a"]["b"][1].get<double>(), 2.5);
  EXPECT_EQ(j["c"].get<int>(), -3);
  EXPECT_EQ(parse_ordered_json(R"({"z": 1, "a": 2})", "f").begin().key(), "z");
}

TEST(JsonFile, DuplicateKeyNamesTheField) {
  EXPECT_EQ(error_of(R"({"workload": {"frame_period_s": 0.08, "frame_period_s": 8}})"),
            "f.json: workload.frame_period_s: duplicate key (give each key once: JSON readers "
            "disagree on which copy wins)");
  // The same key in two different objects is not a duplicate.
  EXPECT_EQ(error_of(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})"), "");
}

TEST(JsonFile, OverflowNamesFileAndField) {
  EXPECT_EQ(error_of(R"({"gpu": {"memory_bytes": 1e309}})"),
            "f.json: gpu.memory_bytes: number 1e309 is out of range (expected a finite number, "
            "|x| < 1.8e308)");
  EXPECT_EQ(error_of(R"({"fit": {"terms": [{"c": 1}, {"c": -1e400}]}})"),
            "f.json: fit.terms[1].c: number -1e400 is out of range (expected a finite number, "
            "|x| < 1.8e308)");
  // The largest double still reads.
  EXPECT_EQ(error_of(R"({"x": 1.7976931348623157e308})"), "");
}

TEST(JsonFile, NestingIsCappedWithoutRecursion) {
  std::string deep;
  for (int i = 0; i < 60000; ++i) deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 60000; ++i) deep += "}";
  const std::string e = error_of(deep);
  EXPECT_NE(e.find("nested deeper than 64 levels"), std::string::npos) << e;
  EXPECT_LT(e.size(), 300u);  // the path is cut, the value never printed
  std::string ok;
  for (int i = 0; i < kMaxJsonDepth; ++i) ok += "[";
  for (int i = 0; i < kMaxJsonDepth; ++i) ok += "]";
  EXPECT_EQ(error_of(ok), "");
  EXPECT_NE(error_of("[" + ok + "]").find("nested deeper"), std::string::npos);
}

TEST(JsonFile, SyntaxErrorsSayNotValidJson) {
  EXPECT_EQ(error_of(R"({"a": )").rfind("f.json: not valid JSON: ", 0), 0u);
  EXPECT_FALSE(parse_json_if_json("windowed", "--set").has_value());
  EXPECT_THROW(parse_json_if_json("1e309", "--set"), ConfigError);
  EXPECT_EQ(parse_json_if_json("[1,2]", "--set")->size(), 2u);
}

TEST(JsonFile, FileSizeIsCapped) {
  // A sparse regular file past the cap: the read stops just past it.
  const std::string big = ::testing::TempDir() + "/metronome_big.json";
  { std::ofstream create(big); }
  std::filesystem::resize_file(big, (size_t{1} << 20) + 10);
  try {
    read_text_file(big, "scenario file", 1 << 20);
    FAIL() << "read the big file whole";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              big + ": larger than 1 MiB, expected a scenario file of at most that size");
  }
  std::filesystem::remove(big);
  EXPECT_THROW(read_text_file("/", "scenario file"), ConfigError);
  EXPECT_THROW(read_text_file("/nonexistent/x.json", "scenario file"), ConfigError);
}

std::string read_error(const std::string& path) {
  try {
    read_text_file(path, "scenario file");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A FIFO without a writer would block open() forever, /dev/zero would never end: both
// are refused before anything is opened, as is every other file that is not a regular one.
TEST(JsonFile, InputsAreRegularFiles) {
  const std::string fifo = ::testing::TempDir() + "/metronome_fifo_" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_error(fifo),
            fifo + ": is a FIFO (named pipe), expected the scenario file as a regular file");
  EXPECT_THROW(require_regular_file(fifo, "GGUF model file"), ConfigError);
  ::unlink(fifo.c_str());
  EXPECT_EQ(read_error("/dev/zero"),
            "/dev/zero: is a character device, expected the scenario file as a regular file");
  EXPECT_EQ(read_error("/"), "/: is a directory, expected the scenario file");
  EXPECT_EQ(read_error("/nonexistent/x.json"),
            "/nonexistent/x.json: cannot open the scenario file (No such file or directory)");
}

TEST(JsonFile, ErrorMessagesNeverDumpWholeValues) {
  nlohmann::json big = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(i);
  const nlohmann::json j = {{"horizon_s", big}};
  JsonSection s(j, "f.json", "");
  try {
    s.number("horizon_s", std::nullopt);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "f.json: horizon_s: expected a number of seconds (150 ms is 0.15), got an array of "
              "100000 values");
  }
  EXPECT_EQ(json_preview(nlohmann::json(std::string(1000, 'x'))).size(), 80u);
}

// A null field is absent: asking for it (has) makes it known to finish(), as reading it does; a
// present field that has() saw but nothing read is still unknown, and so is a null one never asked.
TEST(JsonFile, ANullFieldAskedForIsAbsentNotUnknown) {
  const nlohmann::json j = {{"profile", {1}}, {"profile_file", nullptr}};
  JsonSection asked(j, "f.json", "");
  EXPECT_TRUE(asked.has("profile"));
  EXPECT_FALSE(asked.has("profile_file"));
  asked.raw("profile");
  EXPECT_NO_THROW(asked.finish());

  JsonSection unread(j, "f.json", "");
  EXPECT_FALSE(unread.has("profile_file"));
  EXPECT_TRUE(unread.has("profile"));
  EXPECT_THROW(unread.finish(), ConfigError);  // profile: seen, never read

  JsonSection never(j, "f.json", "");
  never.raw("profile");
  EXPECT_THROW(never.finish(), ConfigError);  // profile_file: never asked for
}

}  // namespace
}  // namespace metronome
