// kstate-bench-parse: scenario 8, how fast kstate loads and parses a manifest
// directory (YAML -> JSON documents -> validated States, the same
// manifests::load_paths the CLI and the daemon call). Reports the best and median
// of several runs in objects per second so that the figure is comparable across
// corpus sizes:
//   kstate-bench-parse [--runs 5] PATH...
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "manifests/loader.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Times manifests::load_paths on a corpus"};
  std::vector<std::string> paths;
  int runs = 5;
  app.add_option("paths", paths, "files or directories to load")->required();
  app.add_option("--runs", runs, "how many times to load them")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);

  std::vector<double> seconds;
  size_t states = 0;
  for (int run = 0; run < runs; ++run) {
    auto start = std::chrono::steady_clock::now();
    auto result = kstate::manifests::load_paths(paths);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!result.ok()) {
      std::cerr << "kstate-bench-parse: the corpus does not load:\n" << result.error_text() << "\n";
      return 2;
    }
    states = result.states.size();
  }
  std::sort(seconds.begin(), seconds.end());
  double median = seconds[seconds.size() / 2];
  std::cout << "objects " << states << " runs " << runs << " median_ms " << median * 1000.0 << " best_ms "
            << seconds.front() * 1000.0 << " objects_per_s " << static_cast<double>(states) / median << "\n";
  return 0;
}
