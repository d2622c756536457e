// The project's version, written beside every output so that a result can be traced to the code
// that made it.
#pragma once

#include <string>

namespace metronome {

std::string version_string();

}  // namespace metronome
