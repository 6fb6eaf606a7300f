// kstate's entry point: everything lives in the libraries; main only dispatches.
#include <iostream>

#include "daemon/cli.hpp"

int main(int argc, char** argv) {
  return kstate::cli::run(argc, argv, kstate::cli::default_handlers(/*whole_process=*/true), std::cout, std::cerr);
}
