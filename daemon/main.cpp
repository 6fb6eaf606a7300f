// kstate's entry point: everything lives in the libraries; main only dispatches. An
// exception that reaches it (a failed allocation the layers below could not turn into
// an error) ends the process with one line and exit code 2, not an abort and a core.
#include <iostream>
#include <new>

#include "daemon/cli.hpp"

int main(int argc, char** argv) {
  try {
    return kstate::cli::run(argc, argv, kstate::cli::default_handlers(/*whole_process=*/true), std::cout, std::cerr);
  } catch (const std::bad_alloc&) {
    std::cerr << "kstate: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "kstate: internal error: " << e.what() << "\n";
  }
  return 2;
}
