// OpenAPI v3 index and documents, read once and cached by content hash (see openapi.hpp).
#include "discovery/openapi.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cctype>
#include <filesystem>

#include "core/encoding.hpp"
#include "discovery/cache.hpp"

namespace kstate::discovery {
namespace {

namespace asio = boost::asio;

// A cached document: this line, then the document as the server sent it. A file whose
// checksum does not match (torn, edited) is fetched again.
constexpr std::string_view cache_header = "kstate-openapi v1 sha256=";

Request openapi_request(std::string path, std::string hash) {
  Request request;
  request.verb = "GET";
  request.path = std::move(path);
  if (!hash.empty()) {
    request.query.emplace_back("hash", std::move(hash));
  }
  request.accept = "application/json";
  request.idempotent = true;
  return request;
}

std::optional<std::string> cached_document(const std::string& file) {
  auto text = read_cache_text(file);
  if (!text) {
    return std::nullopt;
  }
  std::string_view content = text.value();
  const std::size_t newline = content.find('\n');
  if (!content.starts_with(cache_header) || newline == std::string_view::npos ||
      encoding::sha256_hex(content.substr(newline + 1)) !=
          content.substr(cache_header.size(), newline - cache_header.size())) {
    spdlog::info("ignoring the OpenAPI cache file {}: not a kstate cache file, or corrupt", file);
    return std::nullopt;
  }
  return std::string(content.substr(newline + 1));
}

}  // namespace

Result<std::map<std::string, std::string>> parse_openapi_index(std::string_view body) {
  auto document = json::parse(body);
  const json::Value* paths = document.ok() ? json::find(document.value(), "paths") : nullptr;
  if (paths == nullptr || !paths->IsObject()) {
    return Error(ErrorKind::invalid, "the server's OpenAPI v3 index (/openapi/v3) is not valid");
  }
  std::map<std::string, std::string> index;
  for (const auto& member : paths->GetObject()) {
    std::string_view url = json::string_or(json::find(member.value, "serverRelativeURL"), "");
    if (!url.empty()) {
      index.emplace(std::string(member.name.GetString(), member.name.GetStringLength()), std::string(url));
    }
  }
  return index;
}

std::string openapi_index_key(std::string_view group, std::string_view version) {
  return group.empty() ? "api/" + std::string(version) : "apis/" + std::string(group) + "/" + std::string(version);
}

std::string openapi_hash(std::string_view server_relative_url) {
  const std::size_t at = server_relative_url.find("?hash=");
  if (at == std::string_view::npos) {
    return {};
  }
  std::string_view hash = server_relative_url.substr(at + 6);
  bool usable = !hash.empty() && hash.size() <= 256 && std::all_of(hash.begin(), hash.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c));
  });
  return usable ? std::string(hash) : std::string();
}

std::optional<PublishedSchema> find_published_schema(const json::Value& document, const GroupVersionKind& gvk) {
  const json::Value* schemas = json::find_path(document, {"components", "schemas"});
  if (schemas == nullptr || !schemas->IsObject()) {
    return std::nullopt;
  }
  for (const auto& member : schemas->GetObject()) {
    const json::Value* kinds = json::find(member.value, "x-kubernetes-group-version-kind");
    if (kinds == nullptr || !kinds->IsArray()) {
      continue;
    }
    for (const auto& listed : kinds->GetArray()) {
      if (json::string_or(json::find(listed, "group"), "") == gvk.group &&
          json::string_or(json::find(listed, "version"), "") == gvk.version &&
          json::string_or(json::find(listed, "kind"), "") == gvk.kind) {
        return PublishedSchema{&member.value, schemas,
                               std::string(member.name.GetString(), member.name.GetStringLength())};
      }
    }
  }
  return std::nullopt;
}

OpenApiSchemas::OpenApiSchemas(Transport& transport, std::string cache_folder)
    : transport_(transport), cache_folder_(std::move(cache_folder)) {}

template <class T, class Read>
asio::awaitable<void> OpenApiSchemas::once(SharedRead<T>& shared, Read read) {
  if (!shared.finished) {
    shared.finished = std::make_unique<Signal>(co_await asio::this_coro::executor);
    Result<T> result = Error(ErrorKind::internal, "not read");
    try {
      result = co_await read();
    } catch (const std::exception& failure) {
      result = Error(ErrorKind::internal, failure.what());  // the waiters must not wait forever
    }
    shared.result.emplace(std::move(result));
    shared.finished->notify();
    co_return;
  }
  while (!shared.result) {
    co_await shared.finished->wait();
  }
}

asio::awaitable<Result<std::map<std::string, std::string>>> OpenApiSchemas::read_index() {
  ++requests_;
  auto answer = co_await transport_.send(openapi_request("/openapi/v3", ""));
  if (!answer) {
    Error error = std::move(answer).error();
    error.message = "reading the server's OpenAPI v3 index (/openapi/v3): " + error.message;
    co_return error;
  }
  co_return parse_openapi_index(answer->body);
}

asio::awaitable<Result<json::Document>> OpenApiSchemas::read_document(std::string server_relative_url) {
  const std::string hash = openapi_hash(server_relative_url);
  const std::string file = cache_folder_.empty() || hash.empty()
                               ? std::string()
                               : (std::filesystem::path(cache_folder_) / ("openapi-v3-" + hash + ".json")).string();
  std::string body;
  if (auto cached = file.empty() ? std::nullopt : cached_document(file)) {
    body = std::move(*cached);
  } else {
    const std::string path = server_relative_url.substr(0, server_relative_url.find('?'));
    if (!path.starts_with("/openapi/v3/")) {
      co_return Error(ErrorKind::invalid, "the OpenAPI v3 index names an unexpected URL: " + path);
    }
    ++requests_;
    auto answer = co_await transport_.send(openapi_request(path, hash));
    if (!answer) {
      Error error = std::move(answer).error();
      error.message = "reading " + path + ": " + error.message;
      co_return error;
    }
    body = std::move(answer->body);
    if (!file.empty()) {
      std::string content = std::string(cache_header) + encoding::sha256_hex(body) + "\n" + body;
      if (auto written = write_cache_text(file, content); !written.ok()) {
        spdlog::info("cannot keep {} in the cache: {}", path, written.error().message);
      }
    }
  }
  auto document = json::parse(body);
  if (!document.ok() || !document->IsObject()) {
    co_return Error(ErrorKind::invalid, "the server's OpenAPI v3 document " +
                                            server_relative_url.substr(0, server_relative_url.find('?')) +
                                            " is not valid JSON");
  }
  co_return std::move(document).value();
}

asio::awaitable<Result<std::optional<PublishedSchema>>> OpenApiSchemas::schema_of(const GroupVersionKind& gvk) {
  // (named lambdas: GCC 12 mishandles temporaries passed to a coroutine from a coroutine)
  auto read_index_once = [this] { return read_index(); };
  co_await once(index_, read_index_once);
  if (!index_.result->ok()) {
    co_return index_.result->error();
  }
  const std::string key = openapi_index_key(gvk.group, gvk.version);
  auto listed = index_.result->value().find(key);
  if (listed == index_.result->value().end()) {
    co_return std::optional<PublishedSchema>();
  }
  auto& shared = documents_[key];
  if (!shared) {
    shared = std::make_unique<SharedRead<json::Document>>();
  }
  auto read_document_once = [this, url = listed->second] { return read_document(url); };
  co_await once(*shared, read_document_once);
  if (!shared->result->ok()) {
    co_return shared->result->error();
  }
  co_return find_published_schema(shared->result->value(), gvk);
}

}  // namespace kstate::discovery
