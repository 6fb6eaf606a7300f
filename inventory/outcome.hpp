// The exit code of `kstate inventory` from how its two listings went and what was
// found: a pure decision with a table test (tests/inventory/outcome_test.cpp).
//
//   0  listed; with --digest: every digest asked runs somewhere
//   1  with --digest: at least one digest asked runs nowhere (in the scope read)
//   2  an error: pods could not be listed (any reason, 403 included: the question
//      cannot be answered), nodes could not be listed for another reason than 403,
//      a bad flag or kubeconfig
// A 403 on nodes alone does not change the code: the pods say where each image runs
// (spec.nodeName), so the answer stands; what was not allowed is reported (stderr, and
// `incomplete` in the JSON) and the node details are missing.
#pragma once

namespace kstate::inventory {

enum class Listing { listed, forbidden, failed };

enum class Outcome { listed, digest_not_found, failed };

struct OutcomeInput {
  Listing nodes = Listing::listed;
  Listing pods = Listing::listed;
  bool digests_asked = false;
  bool every_digest_found = false;
};

Outcome decide_outcome(const OutcomeInput& input);
int exit_code(Outcome outcome);  // 0, 1, 2 as above

}  // namespace kstate::inventory
