// Lists that `kstate apply` and `kstate test` start as soon as the ApplySet parent is
// read, before the manifests are loaded: for each namespaced kind the inventory
// records in several namespaces, one LIST across namespaces selected by kstate's
// ownership labels, which is the read the engine makes for such a kind
// (EngineOptions::recorded). A re-apply then parses its YAML while the API server
// answers those LISTs, instead of sending them only once every manifest is loaded.
// The engine takes an answer only for exactly the resource (group, version, plural)
// it would have listed; a LIST it does not take cost one request and nothing else.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "core/dynamic_client.hpp"
#include "core/gvk.hpp"
#include "core/signal.hpp"
#include "states/engine.hpp"
#include "states/inventory.hpp"

namespace kstate::states {

namespace asio = boost::asio;

class ReadAhead : public std::enable_shared_from_this<ReadAhead> {
 public:
  // The kinds worth listing ahead: namespaced or not is only known once resolved, so
  // every kind the inventory records in at least two namespaces (its recorded entries;
  // pending ones may not exist yet).
  static std::vector<GroupVersionKind> kinds_to_list(const Inventory& inventory);

  // Starts one LIST (across namespaces, `label_selector`) per kind on the client's
  // executor. The client and the resolver must outlive every LIST (finished()).
  static std::shared_ptr<ReadAhead> start(DynamicClient& client, KindResolver& resolver,
                                          const std::vector<GroupVersionKind>& kinds, std::string label_selector,
                                          const asio::any_io_executor& executor);

  // Whether a LIST was started for this kind (taken or not).
  bool started(const GroupVersionKind& gvk) const;
  // The answer of the LIST started for `resource`, waited for if still in flight, at
  // most once: nullopt when none was started for it, it was taken already, or its kind
  // resolved to another resource (the engine then lists it itself).
  asio::awaitable<std::optional<Result<json::Document>>> take(const ApiResource& resource);
  // Every LIST has been answered (or has failed).
  asio::awaitable<void> finished();

 private:
  struct Listing {
    bool done = false;
    bool taken = false;
    std::optional<ApiResource> resource;  // what the kind resolved to
    Result<json::Document> answer = Error(ErrorKind::internal, "not listed yet");
    std::unique_ptr<Signal> answered;  // notified when done
  };
  using Key = std::tuple<std::string, std::string, std::string>;  // group, version, kind
  static Key key_of(const GroupVersionKind& gvk) { return {gvk.group, gvk.version, gvk.kind}; }
  asio::awaitable<void> list(Key key, GroupVersionKind gvk);
  asio::awaitable<void> wait(Listing& listing);

  DynamicClient* client_ = nullptr;
  KindResolver* resolver_ = nullptr;
  std::string label_selector_;
  std::map<Key, Listing> listings_;
};

}  // namespace kstate::states
