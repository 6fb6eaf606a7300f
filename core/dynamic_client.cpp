// DynamicClient verbs on top of request building and a Transport.
#include "core/dynamic_client.hpp"

#include "core/untrusted_text.hpp"

namespace kstate {
namespace {

Result<json::Document> parse_body(const Response& response, const Request& request, bool keep_managed_fields) {
  if (response.body.empty()) {
    json::Document empty;
    empty.SetObject();
    return empty;
  }
  // Without managedFields: kstate never reads them (json.hpp), and objects read or
  // written are kept for a whole cycle.
  auto document = keep_managed_fields ? json::parse(response.body) : json::parse_api_answer(response.body);
  if (!document) {
    return Error(ErrorKind::invalid,
                 request.verb + " " + request.path + ": the server's answer is not JSON: " + document.error().message);
  }
  return document;
}

}  // namespace

asio::awaitable<Result<std::optional<WatchEvent>>> WatchStream::next() {
  while (next_ready_ >= ready_.size()) {
    ready_.clear();
    next_ready_ = 0;
    auto chunk = co_await body_->read_some();
    if (!chunk) {
      co_return chunk.error();
    }
    if (chunk->empty()) {
      if (decoder_.has_partial_event()) {
        co_return Error(ErrorKind::connection, "watch stream ended in the middle of an event");
      }
      co_return std::optional<WatchEvent>();
    }
    auto events = decoder_.feed(chunk.value());
    if (!events) {
      co_return events.error();
    }
    ready_ = std::move(events.value());
  }
  co_return std::optional<WatchEvent>(std::move(ready_[next_ready_++]));
}

asio::awaitable<Result<json::Document>> DynamicClient::send_for_object(Result<Request> request,
                                                                       bool keep_managed_fields) {
  if (!request) {
    co_return request.error();
  }
  auto response = co_await transport_.send(request.value());
  if (warnings_ != nullptr) {
    for (const auto& text : response ? response->warnings() : response.error().warnings) {
      warnings_->push_back(printable(text, max_warning_bytes));
    }
  }
  if (!response) {
    co_return response.error();
  }
  co_return parse_body(response.value(), request.value(), keep_managed_fields);
}

asio::awaitable<Result<json::Document>> DynamicClient::get(const ApiResource& resource, std::string ns,
                                                           std::string name, std::string subresource) {
  co_return co_await send_for_object(requests::get(resource, ns, name, subresource));
}

asio::awaitable<Result<json::Document>> DynamicClient::get_with_managed_fields(const ApiResource& resource,
                                                                               std::string ns, std::string name) {
  const std::string no_subresource;
  co_return co_await send_for_object(requests::get(resource, ns, name, no_subresource), true);
}

asio::awaitable<Status> DynamicClient::list_pages(const ApiResource& resource, std::string ns, ListOptions options,
                                                  PageHandler on_page) {
  if (options.limit <= 0) {
    options.limit = 500;  // kubectl's chunk size
  }
  for (;;) {
    auto page = co_await send_for_object(requests::list(resource, ns, options), options.keep_managed_fields);
    if (!page) {
      co_return page.error();
    }
    std::string continue_token(json::string_or(json::find_path(*page, {"metadata", "continue"}), ""));
    if (auto handled = on_page(page.value()); !handled) {
      co_return handled.error();
    }
    if (continue_token.empty()) {
      co_return ok_status();
    }
    options.continue_token = std::move(continue_token);
  }
}

asio::awaitable<Result<json::Document>> DynamicClient::list(const ApiResource& resource, std::string ns,
                                                            ListOptions options) {
  // The first page is the result (not copied); items of later pages are appended to it.
  json::Document merged;
  bool first = true;
  auto merge = [&](json::Document& page) -> Status {
    if (first) {
      merged = std::move(page);
      if (!merged.IsObject()) {
        merged.SetObject();
      }
      if (json::Value* items = json::find(merged, "items"); items == nullptr || !items->IsArray()) {
        json::set(merged, "items", json::Value(rapidjson::kArrayType), merged.GetAllocator());
      }
      first = false;
    } else if (auto* page_items = json::find(page, "items"); page_items != nullptr && page_items->IsArray()) {
      json::Value& items = *json::find(merged, "items");
      for (auto& item : page_items->GetArray()) {
        items.PushBack(json::Value(item, merged.GetAllocator()), merged.GetAllocator());
      }
    }
    return ok_status();
  };
  if (auto listed = co_await list_pages(resource, std::move(ns), std::move(options), merge); !listed) {
    co_return listed.error();
  }
  if (auto* metadata = json::find(merged, "metadata"); metadata != nullptr && metadata->IsObject()) {
    metadata->RemoveMember("continue");
    metadata->RemoveMember("remainingItemCount");
  }
  complete_list_items(merged);
  co_return std::move(merged);
}

asio::awaitable<Result<json::Document>> DynamicClient::create(const ApiResource& resource, std::string ns,
                                                              const json::Value& object, WriteOptions options) {
  co_return co_await send_for_object(requests::create(resource, ns, json::dump(object), options));
}

asio::awaitable<Result<json::Document>> DynamicClient::replace(const ApiResource& resource, std::string ns,
                                                               std::string name, const json::Value& object,
                                                               WriteOptions options, std::string subresource) {
  co_return co_await send_for_object(requests::replace(resource, ns, name, json::dump(object), options, subresource));
}

asio::awaitable<Result<json::Document>> DynamicClient::patch(const ApiResource& resource, std::string ns,
                                                             std::string name, PatchType type, std::string body,
                                                             WriteOptions options, std::string subresource) {
  co_return co_await send_for_object(requests::patch(resource, ns, name, type, std::move(body), options, subresource));
}

asio::awaitable<Result<json::Document>> DynamicClient::remove(const ApiResource& resource, std::string ns,
                                                              std::string name, DeleteOptions options) {
  co_return co_await send_for_object(requests::remove(resource, ns, name, options));
}

asio::awaitable<Result<json::Document>> DynamicClient::delete_collection(const ApiResource& resource, std::string ns,
                                                                         ListOptions list_options,
                                                                         DeleteOptions options) {
  co_return co_await send_for_object(requests::delete_collection(resource, ns, list_options, options));
}

asio::awaitable<Result<WatchStream>> DynamicClient::watch(const ApiResource& resource, std::string ns,
                                                          ListOptions options) {
  auto request = requests::watch(resource, ns, options);
  if (!request) {
    co_return request.error();
  }
  auto stream = co_await transport_.open_stream(std::move(request.value()));
  if (!stream) {
    co_return stream.error();
  }
  co_return WatchStream(std::move(stream.value()), options.keep_managed_fields);
}

Result<std::unique_ptr<Client>> make_client(asio::any_io_executor executor, const KubeconfigSources& sources,
                                            TransportOptions options) {
  auto config = load_client_config(sources);
  if (!config) {
    return config.error();
  }
  auto transport = make_http_transport(std::move(executor), config.value(), make_credential_source(config.value()),
                                       std::move(options));
  if (!transport) {
    return transport.error();
  }
  auto client = std::make_unique<Client>();
  client->config = std::move(config.value());
  client->transport = std::move(transport.value());
  client->dynamic = std::make_unique<DynamicClient>(*client->transport);
  return client;
}

void complete_list_items(json::Document& list) {
  std::string_view list_kind = json::string_or(json::find(list, "kind"), "");
  std::string_view api_version = json::string_or(json::find(list, "apiVersion"), "");
  json::Value* items = json::find(list, "items");
  constexpr std::string_view suffix = "List";
  if (items == nullptr || !items->IsArray() || api_version.empty() || list_kind.size() <= suffix.size() ||
      list_kind.substr(list_kind.size() - suffix.size()) != suffix) {
    return;
  }
  const std::string kind(list_kind.substr(0, list_kind.size() - suffix.size()));
  const std::string version(api_version);
  auto& allocator = list.GetAllocator();
  for (auto& item : items->GetArray()) {
    if (!item.IsObject()) {
      continue;
    }
    if (json::find(item, "kind") == nullptr) {
      json::set_string(item, "kind", kind, allocator);
    }
    if (json::find(item, "apiVersion") == nullptr) {
      json::set_string(item, "apiVersion", version, allocator);
    }
  }
}

}  // namespace kstate
