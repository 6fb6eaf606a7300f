// The API server's published OpenAPI v3 schemas, for checking objects the server
// cannot validate yet (`kstate test` of objects in a namespace the same run creates:
// even a dry run answers 404 for them, recording 41). GET /openapi/v3 answers an index,
// group version -> serverRelativeURL carrying a content hash (recording 09, JSON sent
// as text/plain); a group version's document (about 1 MB for api/v1) is fetched only
// when one of its kinds is asked for, once per OpenApiSchemas, and kept on disk next to
// the discovery cache file, as openapi-v3-<hash>.json (with the same ownership and
// permission checks, discovery/cache.hpp): content-addressed, a cached document is
// never stale, and a changed one has a new name. The index itself is read once per
// OpenApiSchemas (one small request per `kstate test` that needs it).
//
// The parsing and the GVK -> schema look-up are pure functions, tested on their own.
#pragma once

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/gvk.hpp"
#include "core/json.hpp"
#include "core/signal.hpp"
#include "core/transport.hpp"

namespace kstate::discovery {

// A kind's schema in a group version's OpenAPI v3 document.
struct PublishedSchema {
  const json::Value* schema = nullptr;      // its entry of components.schemas
  const json::Value* components = nullptr;  // components.schemas, which its $refs point into
  std::string name;                         // e.g. io.k8s.api.apps.v1.Deployment
};

// The index's paths: "api/v1" or "apis/apps/v1" -> serverRelativeURL.
Result<std::map<std::string, std::string>> parse_openapi_index(std::string_view body);
// The index key of a group version: "api/v1", "apis/apps/v1".
std::string openapi_index_key(std::string_view group, std::string_view version);
// The hash a serverRelativeURL carries ("/openapi/v3/apis/apps/v1?hash=1A81..."), when
// it can name a file (letters and digits, at most 256), else "".
std::string openapi_hash(std::string_view server_relative_url);
// The schema of `gvk` in a group version's document: the entry of components.schemas
// whose x-kubernetes-group-version-kind lists it; nullopt when there is none.
std::optional<PublishedSchema> find_published_schema(const json::Value& document, const GroupVersionKind& gvk);

class OpenApiSchemas {
 public:
  // `cache_folder`: where documents are kept ("" keeps none on disk): the discovery
  // cache file's folder.
  OpenApiSchemas(Transport& transport, std::string cache_folder);

  // The schema the server publishes for `gvk`, nullopt when it publishes none (its group
  // version is not in the index, or its document lists no such kind). An error when the
  // index or the document cannot be read. Concurrent callers share each read.
  boost::asio::awaitable<Result<std::optional<PublishedSchema>>> schema_of(const GroupVersionKind& gvk);

  // Requests sent so far (the index's and those of documents not in the disk cache).
  std::uint64_t requests() const { return requests_; }

 private:
  // One read shared by concurrent callers: done once `result` is set.
  template <class T>
  struct SharedRead {
    std::optional<Result<T>> result;
    std::unique_ptr<Signal> finished;
  };
  boost::asio::awaitable<Result<std::map<std::string, std::string>>> read_index();
  boost::asio::awaitable<Result<json::Document>> read_document(std::string server_relative_url);
  template <class T, class Read>
  boost::asio::awaitable<void> once(SharedRead<T>& shared, Read read);

  Transport& transport_;
  std::string cache_folder_;
  std::uint64_t requests_ = 0;
  SharedRead<std::map<std::string, std::string>> index_;
  std::map<std::string, std::unique_ptr<SharedRead<json::Document>>> documents_;  // by index key
};

}  // namespace kstate::discovery
