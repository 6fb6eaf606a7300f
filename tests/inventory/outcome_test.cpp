// The exit code of `kstate inventory`, every combination of how the two listings went
// and what --digest found.
#include "inventory/outcome.hpp"

#include <catch2/catch.hpp>
#include <vector>

namespace outcome_test {

using namespace kstate::inventory;

TEST_CASE("decide_outcome: pods decide, a 403 on nodes alone changes nothing, --digest not found is 1",
          "[inventory][outcome]") {
  struct Row {
    Listing nodes;
    Listing pods;
    bool digests_asked;
    bool every_digest_found;
    Outcome outcome;
    int code;
  };
  const std::vector<Row> rows = {
      {Listing::listed, Listing::listed, false, false, Outcome::listed, 0},
      {Listing::listed, Listing::listed, true, true, Outcome::listed, 0},
      {Listing::listed, Listing::listed, true, false, Outcome::digest_not_found, 1},
      // 403 on nodes: the images are still listed, the code is what they say
      {Listing::forbidden, Listing::listed, false, false, Outcome::listed, 0},
      {Listing::forbidden, Listing::listed, true, true, Outcome::listed, 0},
      {Listing::forbidden, Listing::listed, true, false, Outcome::digest_not_found, 1},
      // any other failure on nodes is an error
      {Listing::failed, Listing::listed, false, false, Outcome::failed, 2},
      {Listing::failed, Listing::listed, true, true, Outcome::failed, 2},
      // pods not listed: no answer, whatever else
      {Listing::listed, Listing::forbidden, false, false, Outcome::failed, 2},
      {Listing::listed, Listing::forbidden, true, false, Outcome::failed, 2},
      {Listing::listed, Listing::failed, true, true, Outcome::failed, 2},
      {Listing::forbidden, Listing::forbidden, false, false, Outcome::failed, 2},
      {Listing::failed, Listing::failed, false, false, Outcome::failed, 2},
  };
  for (const auto& row : rows) {
    INFO("nodes " << static_cast<int>(row.nodes) << " pods " << static_cast<int>(row.pods) << " asked "
                  << row.digests_asked << " found " << row.every_digest_found);
    auto outcome = decide_outcome({row.nodes, row.pods, row.digests_asked, row.every_digest_found});
    CHECK(outcome == row.outcome);
    CHECK(exit_code(outcome) == row.code);
  }
}

}  // namespace outcome_test
