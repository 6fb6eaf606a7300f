// The exit code decision of `kstate inventory` (see outcome.hpp).
#include "inventory/outcome.hpp"

namespace kstate::inventory {

Outcome decide_outcome(const OutcomeInput& input) {
  if (input.pods != Listing::listed || input.nodes == Listing::failed) {
    return Outcome::failed;
  }
  if (input.digests_asked && !input.every_digest_found) {
    return Outcome::digest_not_found;
  }
  return Outcome::listed;
}

int exit_code(Outcome outcome) {
  switch (outcome) {
    case Outcome::listed:
      return 0;
    case Outcome::digest_not_found:
      return 1;
    case Outcome::failed:
      return 2;
  }
  return 2;
}

}  // namespace kstate::inventory
