// What is generated from the command line's own definitions (cli.hpp, command_line()):
// `kstate completion bash|zsh|fish` prints a completion script (subcommands, their
// flags, the values a flag takes: one of a list, a file or a folder), and the hidden
// `kstate man` prints the kstate(1) man page in roff. The build runs both to install
// them (daemon/CMakeLists.txt), so a flag added to cli.cpp or to the config key table
// appears in the completions and the man page without another edit.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "daemon/cli.hpp"

namespace kstate::cli {

// The completion script for `shell` (bash, zsh or fish); empty for another shell.
std::string completion_script(const CommandLine& line, std::string_view shell);

// kstate(1) in roff (man(7) macros).
std::string man_page(const CommandLine& line);

// Handlers of `kstate completion SHELL` and `kstate man`.
int print_completion(const Invocation& invocation, std::ostream& out, std::ostream& err);
int print_man_page(const Invocation& invocation, std::ostream& out, std::ostream& err);

}  // namespace kstate::cli
