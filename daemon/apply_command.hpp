// `kstate apply` / `kstate test`: one reconcile of files and directories, then exit
// (0 ok; test: 1 when changes are pending; 2 on any error).
#pragma once

#include <ostream>

#include "daemon/cli.hpp"

namespace kstate::daemon {

// `exit_when_reported`: the command is the whole process (main), so once the report
// is written and flushed the process ends there, without freeing what the run built
// (as clang's -disable-free does): tearing down 1,000 states, their live objects and
// the report took 1-3 ms of a 35 ms re-apply. Builds with AddressSanitizer always
// tear down, so that its leak check still covers these commands.
int run_apply_command(const cli::Invocation& invocation, std::ostream& out, std::ostream& err, bool test_mode,
                      bool exit_when_reported = false);

}  // namespace kstate::daemon
