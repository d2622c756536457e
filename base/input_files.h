// The files this process has read as inputs, so that no output is written over one. Without it
// `simulate --metrics my.json` truncated its own scenario and exited 0, and a sweep whose folder
// held its scenario cleared it before reading it again. Files are known by device and inode, so
// another spelling of a path (./x, a link) is the same file.
#pragma once

#include <string>
#include <string_view>

namespace metronome {

// Records the regular file at `path`, read as the `what` ("scenario file"). Every reader notes its
// input through require_regular_file (base/json_file.h); thread-safe.
void note_input_file(const std::string& path, std::string_view what);

// ConfigError "<label>: is <input path>, the <what> this run reads; expected another path
// (writing would replace it)" when `path` names a file noted as an input. `label` names the output
// for the message ("--metrics my.json", "--out prev (its scenario.json)").
void refuse_input_as_output(const std::string& path, std::string_view label);

}  // namespace metronome
