// Discovery cache files: format, checksum, permissions and atomic replacement.
#include "discovery/cache.hpp"

#include <fcntl.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/encoding.hpp"
#include "core/json.hpp"
#include "core/transport.hpp"

namespace kstate::discovery {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view header_prefix = "kstate-discovery-cache v1 sha256=";
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void write_strings(Writer& writer, const char* key, const std::vector<std::string>& values) {
  writer.Key(key);
  writer.StartArray();
  for (const auto& value : values) {
    writer.String(value);
  }
  writer.EndArray();
}

void write_resources(Writer& writer, const char* key, const std::vector<ApiResource>& resources) {
  writer.Key(key);
  writer.StartArray();
  for (const auto& resource : resources) {
    writer.StartObject();
    writer.Key("group");
    writer.String(resource.group);
    writer.Key("version");
    writer.String(resource.version);
    writer.Key("kind");
    writer.String(resource.kind);
    writer.Key("plural");
    writer.String(resource.plural);
    writer.Key("singular");
    writer.String(resource.singular);
    writer.Key("namespaced");
    writer.Bool(resource.namespaced);
    writer.Key("preferred");
    writer.Bool(resource.preferred_version);
    write_strings(writer, "verbs", resource.verbs);
    write_strings(writer, "shortNames", resource.short_names);
    write_strings(writer, "categories", resource.categories);
    write_strings(writer, "subresources", resource.subresources);
    writer.EndObject();
  }
  writer.EndArray();
}

std::vector<std::string> read_strings(const json::Value& object, const char* key) {
  std::vector<std::string> out;
  if (const auto* list = json::find(object, key); list != nullptr && list->IsArray()) {
    for (const auto& item : list->GetArray()) {
      if (item.IsString()) {
        out.emplace_back(item.GetString());
      }
    }
  }
  return out;
}

std::optional<std::vector<ApiResource>> read_resources(const json::Value& document, const char* key) {
  const auto* list = json::find(document, key);
  if (list == nullptr || !list->IsArray()) {
    return std::nullopt;
  }
  std::vector<ApiResource> out;
  for (const auto& item : list->GetArray()) {
    ApiResource resource;
    resource.group = std::string(json::string_or(json::find(item, "group"), ""));
    resource.version = std::string(json::string_or(json::find(item, "version"), ""));
    resource.kind = std::string(json::string_or(json::find(item, "kind"), ""));
    resource.plural = std::string(json::string_or(json::find(item, "plural"), ""));
    resource.singular = std::string(json::string_or(json::find(item, "singular"), ""));
    const auto* namespaced = json::find(item, "namespaced");
    resource.namespaced = namespaced != nullptr && namespaced->IsTrue();
    const auto* preferred = json::find(item, "preferred");
    resource.preferred_version = preferred == nullptr || preferred->IsTrue();
    resource.verbs = read_strings(item, "verbs");
    resource.short_names = read_strings(item, "shortNames");
    resource.categories = read_strings(item, "categories");
    resource.subresources = read_strings(item, "subresources");
    out.push_back(std::move(resource));
  }
  return out;
}

// A cache entry decides where objects are sent (a planted entry mapping ConfigMap to
// `secrets` sends ConfigMaps' data to the Secret endpoint), so only files and folders
// that nobody else could have written are trusted: owned by this user (or root), not
// writable by group or others. The checksum only catches corruption; an attacker
// recomputes it. `stat` follows symbolic links; the file itself must not be one.
Status check_private(const fs::path& path, bool is_file) {
  struct stat status {};
  if ((is_file ? ::lstat(path.c_str(), &status) : ::stat(path.c_str(), &status)) != 0) {
    return Error(errno == ENOENT ? ErrorKind::not_found : ErrorKind::io,
                 "cannot stat " + path.string() + ": " + std::strerror(errno));
  }
  if (is_file && !S_ISREG(status.st_mode)) {
    return Error(ErrorKind::forbidden, path.string() + " is not a regular file");
  }
  if (status.st_uid != ::geteuid() && status.st_uid != 0) {
    return Error(ErrorKind::forbidden,
                 path.string() + " is owned by another user (uid " + std::to_string(status.st_uid) + ")");
  }
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Error(ErrorKind::forbidden, path.string() + " is writable by group or others");
  }
  return ok_status();
}

// The folders of a cache file that must be private: <cache-dir>/discovery/<host>/file.
Status check_cache_folders(const fs::path& file) {
  fs::path folder = file.parent_path();
  for (int level = 0; level < 3 && !folder.empty(); ++level, folder = folder.parent_path()) {
    if (auto checked = check_private(folder, false); !checked) {
      return checked;
    }
  }
  return ok_status();
}

// Discovery documents of a big cluster (hundreds of CRDs) take a few MB.
constexpr std::uintmax_t max_cache_bytes = 64 * 1024 * 1024;

// mkdir -p with mode 0700 for every folder it creates.
Status make_private_directories(const fs::path& folder) {
  fs::path partial;
  for (const auto& part : folder) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return Error(ErrorKind::io, "cannot create " + partial.string() + ": " + std::strerror(errno));
    }
  }
  return ok_status();
}

}  // namespace

std::string default_cache_dir() {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    return {};
  }
  return std::string(home) + "/.kube/cache";
}

std::string cache_file_for(const std::string& cache_dir, const std::string& server_url) {
  std::string host_port;
  if (auto address = parse_server_url(server_url); address) {
    host_port = address->host + ":" + address->port + address->path_prefix;
  } else {
    host_port = server_url;
  }
  // kubectl's rule: everything but letters, digits and '.' becomes '_'.
  for (auto& c : host_port) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') {
      c = '_';
    }
  }
  return (fs::path(cache_dir) / "discovery" / host_port / "kstate-discovery.json").string();
}

std::string serialize_cache_entry(const CacheEntry& entry) {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  writer.StartObject();
  writer.Key("server");
  writer.String(entry.server);
  writer.Key("fetchedAt");
  writer.Int64(std::chrono::duration_cast<std::chrono::seconds>(entry.fetched_at.time_since_epoch()).count());
  writer.Key("format");
  writer.String(entry.format);
  writer.Key("etagApi");
  writer.String(entry.etag_api);
  writer.Key("etagApis");
  writer.String(entry.etag_apis);
  write_resources(writer, "core", entry.core_resources);
  write_resources(writer, "groups", entry.group_resources);
  writer.EndObject();
  std::string payload = buffer.GetString();
  return std::string(header_prefix) + encoding::sha256_hex(payload) + "\n" + payload;
}

Result<CacheEntry> parse_cache_entry(std::string_view text) {
  auto newline = text.find('\n');
  if (text.substr(0, header_prefix.size()) != header_prefix || newline == std::string_view::npos) {
    return Error(ErrorKind::io, "not a kstate discovery cache file");
  }
  auto checksum = text.substr(header_prefix.size(), newline - header_prefix.size());
  auto payload = text.substr(newline + 1);
  if (encoding::sha256_hex(payload) != checksum) {
    return Error(ErrorKind::io, "discovery cache checksum mismatch (corrupt file)");
  }
  auto document = json::parse(payload);
  if (!document || !document->IsObject()) {
    return Error(ErrorKind::io, "discovery cache is not valid JSON");
  }
  CacheEntry entry;
  entry.server = std::string(json::string_or(json::find(*document, "server"), ""));
  // A time the clock cannot represent (seconds -> nanoseconds would overflow) leaves
  // the entry at the epoch: stale, so it is refetched rather than trusted.
  constexpr std::int64_t max_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::duration::max()).count();
  if (const auto* fetched = json::find(*document, "fetchedAt");
      fetched != nullptr && fetched->IsInt64() && fetched->GetInt64() >= 0 && fetched->GetInt64() < max_seconds) {
    entry.fetched_at = std::chrono::system_clock::time_point(std::chrono::seconds(fetched->GetInt64()));
  }
  entry.format = std::string(json::string_or(json::find(*document, "format"), ""));
  entry.etag_api = std::string(json::string_or(json::find(*document, "etagApi"), ""));
  entry.etag_apis = std::string(json::string_or(json::find(*document, "etagApis"), ""));
  auto core = read_resources(*document, "core");
  auto groups = read_resources(*document, "groups");
  if (!core || !groups) {
    return Error(ErrorKind::io, "discovery cache has no resources");
  }
  entry.core_resources = std::move(*core);
  entry.group_resources = std::move(*groups);
  return entry;
}

Result<CacheEntry> read_cache(const std::string& file) {
  auto content = read_cache_text(file);
  if (!content) {
    return content.error();
  }
  return parse_cache_entry(content.value());
}

Result<std::string> read_cache_text(const std::string& file) {
  if (auto checked = check_private(file, true); !checked) {
    if (checked.error().kind == ErrorKind::not_found) {
      return Error(ErrorKind::not_found, "no discovery cache at " + file);
    }
    return Error(checked.error().kind, "not trusted: " + checked.error().message);
  }
  if (auto checked = check_cache_folders(file); !checked) {
    return Error(checked.error().kind, "not trusted: " + checked.error().message);
  }
  std::error_code size_error;
  if (fs::file_size(file, size_error) > max_cache_bytes && !size_error) {
    return Error(ErrorKind::io, "larger than " + std::to_string(max_cache_bytes / (1024 * 1024)) + " MiB");
  }
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    return Error(ErrorKind::not_found, "no discovery cache at " + file);
  }
  std::string content;
  char chunk[64 * 1024];
  for (;;) {
    const auto count = ::read(fd, chunk, sizeof chunk);
    if (count < 0 && errno == EINTR) {
      continue;
    }
    if (count <= 0 || content.size() + static_cast<std::size_t>(count) > max_cache_bytes) {
      break;
    }
    content.append(chunk, static_cast<std::size_t>(count));
  }
  ::close(fd);
  return content;
}

Status write_cache(const std::string& file, const CacheEntry& entry) {
  return write_cache_text(file, serialize_cache_entry(entry));
}

Status write_cache_text(const std::string& file, std::string_view content) {
  fs::path path(file);
  if (auto made = make_private_directories(path.parent_path()); !made) {
    return made;
  }
  // Never into a folder someone else controls (they could swap the file afterwards, or
  // have left a link where the temporary file goes).
  if (auto checked = check_cache_folders(path); !checked) {
    return Error(checked.error().kind, "not written: " + checked.error().message);
  }
  std::string temporary = file + ".tmp." + std::to_string(::getpid());
  ::unlink(temporary.c_str());  // a leftover of an earlier run with the same pid
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Error(ErrorKind::io, "cannot write " + temporary + ": " + std::strerror(errno));
  }
  std::size_t written = 0;
  while (written < content.size()) {
    auto count = ::write(fd, content.data() + written, content.size() - written);
    if (count < 0 && errno == EINTR) {
      continue;
    }
    if (count <= 0) {
      ::close(fd);
      ::unlink(temporary.c_str());
      return Error(ErrorKind::io, "cannot write " + temporary + ": " + std::strerror(errno));
    }
    written += static_cast<std::size_t>(count);
  }
  // No fsync: it cost a cold run 1-8 ms (bench/RESULTS.md), and a file a crash left
  // torn fails its checksum when read, which reads as no cache (discovery asks again).
  ::close(fd);
  if (::rename(temporary.c_str(), file.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return Error(ErrorKind::io, "cannot replace " + file + ": " + std::strerror(errno));
  }
  return ok_status();
}

void remove_cache(const std::string& file) {
  ::unlink(file.c_str());
}

}  // namespace kstate::discovery
