// Progress for people at a terminal: one line on stderr, redrawn in place,
// "profile [##########..........] 3/6 transformer, b=1, seq=4096". Nothing
// when stderr is not a terminal (logs and pipes stay clean).
#pragma once

#include <string>

#include "common/progress.h"

namespace pipeplan::commands {

// A progress reporter labelled `label`, or an empty one when stderr is not
// a terminal.
ProgressFn terminal_progress(std::string label);

}  // namespace pipeplan::commands
