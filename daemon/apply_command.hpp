// `kstate apply` / `kstate test`: one reconcile of files and directories, then exit
// (0 ok; test: 1 when changes are pending; 2 on any error).
#pragma once

#include <ostream>

#include "daemon/cli.hpp"

namespace kstate::daemon {

int run_apply_command(const cli::Invocation& invocation, std::ostream& out, std::ostream& err, bool test_mode);

}  // namespace kstate::daemon
