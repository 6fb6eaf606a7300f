// ReconcileSummary's one-line description, shared by STATUS= and the logs; the
// interface's default drift correction (none: drift is left to the resync).
#include "daemon/reconciler.hpp"

namespace kstate::daemon {

std::string ReconcileSummary::describe() const {
  if (!api_reachable) {
    return "API server unreachable: " + error;
  }
  std::string text = std::to_string(states) + " states: " + std::to_string(created) + " created, " +
                     std::to_string(updated) + " updated, " + std::to_string(deleted) + " deleted, " +
                     std::to_string(unchanged) + " unchanged, " + std::to_string(failed) + " failed";
  if (adopted > 0) {
    text += ", " + std::to_string(adopted) + " adopted";
  }
  if (prune_deferred > 0) {
    text += ", " + std::to_string(prune_deferred) + " to prune once the folder is quiet";
  }
  if (!error.empty()) {
    text += "; error: " + error;
  }
  return text;
}

boost::asio::awaitable<ReconcileSummary> Reconciler::correct_drift() {
  co_return ReconcileSummary{};
}

}  // namespace kstate::daemon
