#include "base/version.h"

namespace metronome {

std::string version_string() { return METRONOME_VERSION; }

}  // namespace metronome
