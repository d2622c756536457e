// Outputs on a failing disk: /dev/full accepts the open and refuses every write, as a full disk
// does. A failed write is an IoError naming the path, and never replaces a good file.
#include "base/output_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "base/config_error.h"
#include "base/json_file.h"
#include "base/output_dir.h"

namespace metronome {
namespace {

std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("metronome_output_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OutputFile, FullDiskIsAnIoErrorNamingThePath) {
  OutputFile f("/dev/full", "--trace");
  f.write("some bytes");
  try {
    f.close();
    FAIL() << "closing /dev/full succeeded";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write /dev/full: No space left on device");
  }
}

TEST(OutputFile, BadPathsAreConfigErrors) {
  const std::string d = temp_dir("bad");
  EXPECT_THROW(OutputFile(d, "--trace"), ConfigError);                      // a directory
  EXPECT_THROW(OutputFile(d + "/missing/x.json", "--trace"), ConfigError);  // no such folder
}

TEST(OutputFile, AtomicWriteNeverReplacesAGoodFileWithAFailedOne) {
  const std::string d = temp_dir("atomic");
  const std::string path = d + "/sweep.json";
  write_file_atomically(path, "good\n", "sweep.json");
  EXPECT_EQ(slurp(path), "good\n");
  // The temporary file lands on a full disk.
  std::filesystem::create_symlink("/dev/full", path + ".tmp");
  EXPECT_THROW(write_file_atomically(path, "new\n", "sweep.json"), IoError);
  EXPECT_EQ(slurp(path), "good\n");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path + ".tmp")));
  write_file_atomically(path, "new\n", "sweep.json");
  EXPECT_EQ(slurp(path), "new\n");
}

TEST(OutputDir, LocksRemovesStaleMarkersAndRefusesFiles) {
  const std::string d = temp_dir("dir");
  write_file_atomically(d + "/summary.json", "{\"complete\": true}\n", "summary.json");
  write_file_atomically(d + "/keep.csv", "x\n", "keep.csv");
  {
    OutputDir out(d, "--out", {});
    EXPECT_FALSE(std::filesystem::exists(d + "/summary.json"));  // gone before anything is written
    EXPECT_TRUE(std::filesystem::exists(d + "/keep.csv"));
    // A second writer (another process, or this one) is refused while the first holds the lock.
    try {
      OutputDir again(d, "--out", {});
      FAIL() << "two writers on one folder";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("another metronome process is writing this folder"),
                std::string::npos);
    }
  }
  EXPECT_FALSE(std::filesystem::exists(d + "/" + std::string(OutputDir::kLockName)));
  OutputDir after(d, "--out", {});  // released: the next run may take it
  EXPECT_THROW(OutputDir(d + "/keep.csv", "--out", {}), ConfigError);
}

// Another command's finished run in the folder (a simulate's summary.json, where a sweep now
// writes; a sweep's sweep.json, where a simulate now writes) is no longer marked finished.
TEST(OutputDir, RemovesEveryCommandsMarker) {
  const std::string d = temp_dir("markers");
  for (const std::string& m : OutputDir::kMarkers) {
    write_file_atomically(d + "/" + m, "{\"complete\": true}\n", m);
  }
  write_file_atomically(d + "/timeseries.csv", "x\n", "timeseries.csv");
  OutputDir out(d, "--out", {"aggregate.json"});
  for (const std::string& m : OutputDir::kMarkers) {
    EXPECT_FALSE(std::filesystem::exists(d + "/" + m)) << m;
  }
  EXPECT_TRUE(std::filesystem::exists(d + "/timeseries.csv"));
}

// A file read as an input is no output, under whatever name the output gives it: streamed,
// written whole, or a stale file of a folder; the file is left as it was.
TEST(InputFiles, NoOutputReplacesAFileThisRunRead) {
  const std::string d = temp_dir("input");
  write_file_atomically(d + "/in.json", "{}\n", "in.json");
  const std::string other = d + "/other.json";
  write_file_atomically(other, "{}\n", "other.json");
  std::filesystem::create_symlink(d + "/in.json", d + "/link.json");
  EXPECT_EQ(read_text_file(d + "/./in.json", "scenario file"), "{}\n");
  const auto refused = [](const std::function<void()>& write, const std::string& label) {
    try {
      write();
      ADD_FAILURE() << label << ": written over the input";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(label + ": is " + "/"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("the scenario file this run reads"), std::string::npos);
    }
  };
  refused([&] { OutputFile f(d + "/link.json", "--trace"); }, "--trace " + d + "/link.json");
  refused([&] { write_file_atomically(d + "/in.json", "x", "--out"); }, "--out " + d + "/in.json");
  refused([&] { OutputDir o(d, "--out", {"in.json"}); }, "--out " + d + " (its in.json)");
  EXPECT_EQ(slurp(d + "/in.json"), "{}\n");
  OutputFile f(other, "--trace");  // a file nobody read is written as before
  f.close();
}

}  // namespace
}  // namespace metronome
