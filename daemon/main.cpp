// kstate's entry point: everything lives in the libraries; main only dispatches.
#include <iostream>

#include "daemon/cli.hpp"

int main(int argc, char** argv) {
  return kstate::cli::run(argc, argv, kstate::cli::default_handlers(), std::cout, std::cerr);
}
