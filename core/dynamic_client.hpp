// DynamicClient: every verb for any resource (CRDs included) with no per-kind code,
// as the OpenShift/Python DynamicClient and kube-rs `Api<DynamicObject>` do — request
// building (request.hpp) + a Transport. Objects travel as JSON documents.
//
// Lifetimes: the awaitables are lazy; arguments passed by reference (ApiResource,
// json::Value) must stay alive until the co_await completes — co_await the call in
// the same expression, as in `auto pod = co_await client.get(pods, "default", "web");`.
//
// Also here: make_client() (kubeconfig -> credentials -> transport -> client in one
// call) and run_sync() for synchronous callers such as the CLI.
#pragma once

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api_resource.hpp"
#include "core/json.hpp"
#include "core/kubeconfig.hpp"
#include "core/request.hpp"
#include "core/transport.hpp"
#include "core/watch.hpp"

namespace kstate {

// A running watch. next() returns the next event, nullopt when the server ended the
// watch (timeoutSeconds, or a clean close): restart from the last resourceVersion.
class WatchStream {
 public:
  // `keep_managed_fields`: event objects keep metadata.managedFields (ListOptions).
  explicit WatchStream(std::unique_ptr<ResponseStream> body, bool keep_managed_fields = false)
      : body_(std::move(body)), decoder_(keep_managed_fields) {}
  asio::awaitable<Result<std::optional<WatchEvent>>> next();

 private:
  std::unique_ptr<ResponseStream> body_;
  WatchDecoder decoder_;
  std::vector<WatchEvent> ready_;
  std::size_t next_ready_ = 0;
};

class DynamicClient {
 public:
  explicit DynamicClient(Transport& transport) : transport_(transport) {}

  asio::awaitable<Result<json::Document>> get(const ApiResource& resource, std::string ns, std::string name,
                                              std::string subresource);
  // As get(), with metadata.managedFields kept (every other answer is parsed without
  // them): taking an object over from other field managers needs their field sets.
  asio::awaitable<Result<json::Document>> get_with_managed_fields(const ApiResource& resource, std::string ns,
                                                                  std::string name);
  // Every page (limit per page: options.limit, default 500) merged into one List:
  // the first page's apiVersion/kind/metadata.resourceVersion and all items, each with
  // its kind and apiVersion (complete_list_items).
  asio::awaitable<Result<json::Document>> list(const ApiResource& resource, std::string ns, ListOptions options);
  // The same LIST, each page handed to `on_page` as it arrives and dropped after it, so
  // that memory holds one page, not the collection: for callers that keep a summary.
  // Stops at the first error of a request or of `on_page`.
  using PageHandler = std::function<Status(json::Document& page)>;
  asio::awaitable<Status> list_pages(const ApiResource& resource, std::string ns, ListOptions options,
                                     PageHandler on_page);
  asio::awaitable<Result<json::Document>> create(const ApiResource& resource, std::string ns, const json::Value& object,
                                                 WriteOptions options);
  asio::awaitable<Result<json::Document>> replace(const ApiResource& resource, std::string ns, std::string name,
                                                  const json::Value& object, WriteOptions options,
                                                  std::string subresource);
  // `body` in the format of `type`: a merge patch, a JSON patch array, a strategic
  // merge patch, or the full apply configuration (JSON is valid YAML).
  asio::awaitable<Result<json::Document>> patch(const ApiResource& resource, std::string ns, std::string name,
                                                PatchType type, std::string body, WriteOptions options,
                                                std::string subresource);
  // Returns what the server returns: the object (being deleted, with finalizers or
  // deletionTimestamp) or a Status.
  asio::awaitable<Result<json::Document>> remove(const ApiResource& resource, std::string ns, std::string name,
                                                 DeleteOptions options);
  asio::awaitable<Result<json::Document>> delete_collection(const ApiResource& resource, std::string ns,
                                                            ListOptions list_options, DeleteOptions options);
  asio::awaitable<Result<WatchStream>> watch(const ApiResource& resource, std::string ns, ListOptions options);

  // Overloads with the default options. They are plain functions, not coroutines: GCC 12
  // destroys default-argument temporaries of a coroutine call made inside another
  // coroutine twice, so the coroutines above take every argument explicitly.
  asio::awaitable<Result<json::Document>> get(const ApiResource& resource, std::string ns, std::string name) {
    return get(resource, std::move(ns), std::move(name), std::string());
  }
  asio::awaitable<Result<json::Document>> list(const ApiResource& resource, std::string ns) {
    return list(resource, std::move(ns), ListOptions{});
  }
  asio::awaitable<Result<json::Document>> create(const ApiResource& resource, std::string ns,
                                                 const json::Value& object) {
    return create(resource, std::move(ns), object, WriteOptions{});
  }
  asio::awaitable<Result<json::Document>> replace(const ApiResource& resource, std::string ns, std::string name,
                                                  const json::Value& object, WriteOptions options = WriteOptions{}) {
    return replace(resource, std::move(ns), std::move(name), object, std::move(options), std::string());
  }
  asio::awaitable<Result<json::Document>> patch(const ApiResource& resource, std::string ns, std::string name,
                                                PatchType type, std::string body,
                                                WriteOptions options = WriteOptions{}) {
    return patch(resource, std::move(ns), std::move(name), type, std::move(body), std::move(options), std::string());
  }
  asio::awaitable<Result<json::Document>> remove(const ApiResource& resource, std::string ns, std::string name) {
    return remove(resource, std::move(ns), std::move(name), DeleteOptions{});
  }
  asio::awaitable<Result<json::Document>> delete_collection(const ApiResource& resource, std::string ns,
                                                            ListOptions list_options = ListOptions{}) {
    return delete_collection(resource, std::move(ns), std::move(list_options), DeleteOptions{});
  }
  asio::awaitable<Result<WatchStream>> watch(const ApiResource& resource, std::string ns) {
    return watch(resource, std::move(ns), ListOptions{});
  }

  Transport& transport() { return transport_; }

  // A client like this one that also appends the server's warnings (Warning headers,
  // on successful and failed answers alike) to `sink`, made printable and at most
  // max_warning_bytes each: the engine gives each state its own, so that a warning
  // is shown with the state whose request drew it. `sink` must outlive the copy.
  DynamicClient collecting_warnings(std::vector<std::string>& sink) const {
    DynamicClient copy = *this;
    copy.warnings_ = &sink;
    return copy;
  }

 private:
  asio::awaitable<Result<json::Document>> send_for_object(Result<Request> request, bool keep_managed_fields = false);

  Transport& transport_;
  std::vector<std::string>* warnings_ = nullptr;  // collecting_warnings()
};

// A ready-to-use client: configuration, transport and DynamicClient.
struct Client {
  ClientConfig config;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<DynamicClient> dynamic;
};
// Resolves the kubeconfig (kubeconfig.hpp) and builds the transport on `executor`.
Result<std::unique_ptr<Client>> make_client(asio::any_io_executor executor, const KubeconfigSources& sources,
                                            TransportOptions options = {});

// Runs an awaitable to completion on `io` (which must not be running elsewhere) and
// returns its value: the bridge for synchronous callers (CLI, tests). Exceptions
// thrown inside propagate.
template <class T>
T run_sync(asio::io_context& io, asio::awaitable<T> task) {
  std::optional<T> result;
  std::exception_ptr failure;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { result.emplace(co_await std::move(task)); },
      [&](std::exception_ptr error) { failure = error; });
  io.restart();
  io.run();
  if (failure) {
    std::rethrow_exception(failure);
  }
  return std::move(*result);
}

inline void run_sync(asio::io_context& io, asio::awaitable<void> task) {
  std::exception_ptr failure;
  asio::co_spawn(io, std::move(task), [&](std::exception_ptr error) { failure = error; });
  io.restart();
  io.run();
  if (failure) {
    std::rethrow_exception(failure);
  }
}

// As run_sync, but returns as soon as `task` has completed: work it started and left
// running (requests it spawned) stays pending on `io`, for its next run.
template <class T>
T run_until_complete(asio::io_context& io, asio::awaitable<T> task) {
  std::optional<T> result;
  std::exception_ptr failure;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { result.emplace(co_await std::move(task)); },
      [&](std::exception_ptr error) {
        failure = error;
        io.stop();
      });
  io.restart();
  io.run();
  if (failure) {
    std::rethrow_exception(failure);
  }
  return std::move(*result);
}

// A LIST answer of a built-in kind has items without kind and apiVersion (a real
// kube-apiserver strips them: ConfigMapList items are bare objects; custom resources
// keep theirs). Sets each missing one from the list's own, "XList" -> "X", as
// client-go's unstructured lists do, so that an object read by a LIST looks like the
// same object read by a GET (compared with a manifest, shown in a diff).
void complete_list_items(json::Document& list);

}  // namespace kstate
