// imageID parsing and digest matching (see image_id.hpp).
#include "inventory/image_id.hpp"

namespace kstate::inventory {
namespace {

bool is_lower_hex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

// "repo:tag" -> "repo": a ':' after the last '/' starts a tag ("host:5000/app" keeps its port).
std::string_view without_tag(std::string_view repository) {
  auto colon = repository.rfind(':');
  auto slash = repository.rfind('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    return repository.substr(0, colon);
  }
  return repository;
}

}  // namespace

const char* to_string(DigestKind kind) {
  switch (kind) {
    case DigestKind::none:
      return "none";
    case DigestKind::repo_digest:
      return "repoDigest";
    case DigestKind::image_id:
      return "imageID";
    case DigestKind::unknown:
      return "unknown";
  }
  return "unknown";
}

bool is_digest(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return false;
  }
  auto algorithm = text.substr(0, colon);
  auto hex = text.substr(colon + 1);
  std::size_t length = algorithm == "sha256" ? 64 : algorithm == "sha512" ? 128 : 0;
  return length != 0 && hex.size() == length && is_lower_hex(hex);
}

ImageId parse_image_id(std::string_view image_id) {
  ImageId parsed;
  if (image_id.empty()) {
    return parsed;
  }
  std::string_view rest = image_id;
  if (auto separator = rest.find("://"); separator != std::string_view::npos) {
    parsed.scheme = std::string(rest.substr(0, separator));
    rest = rest.substr(separator + 3);
  }
  if (is_digest(rest)) {
    parsed.kind = DigestKind::image_id;
    parsed.digest = std::string(rest);
    return parsed;
  }
  auto at = rest.rfind('@');
  if (at != std::string_view::npos && at > 0 && is_digest(rest.substr(at + 1))) {
    parsed.kind = DigestKind::repo_digest;
    parsed.digest = std::string(rest.substr(at + 1));
    parsed.repository = std::string(without_tag(rest.substr(0, at)));
    return parsed;
  }
  parsed.kind = DigestKind::unknown;
  return parsed;
}

Result<DigestQuery> parse_digest_query(std::string_view text) {
  DigestQuery query;
  query.text = std::string(text);
  std::string_view digest = text;
  if (auto at = text.rfind('@'); at != std::string_view::npos) {
    query.repository = std::string(without_tag(text.substr(0, at)));
    digest = text.substr(at + 1);
    if (query.repository.empty()) {
      return Error(ErrorKind::invalid_input, "--digest \"" + query.text + "\": nothing before '@'");
    }
  }
  if (!is_digest(digest)) {
    return Error(ErrorKind::invalid_input,
                 "--digest \"" + query.text +
                     "\" is not a digest: expected sha256:<64 lowercase hex digits> (or sha512:<128>), "
                     "optionally after a repository and '@' as in a registry's RepoDigests");
  }
  query.digest = std::string(digest);
  return query;
}

DigestMatch match_digest(const DigestQuery& query, const ImageId& image_id) {
  if (image_id.digest.empty() || image_id.digest != query.digest) {
    return DigestMatch::none;
  }
  return image_id.kind == DigestKind::repo_digest ? DigestMatch::repo_digest : DigestMatch::image_id;
}

std::string runtime_of(std::string_view container_id, const ImageId& image_id) {
  if (auto separator = container_id.find("://"); separator != std::string_view::npos && separator > 0) {
    return std::string(container_id.substr(0, separator));
  }
  if (image_id.scheme == "docker-pullable" || image_id.scheme == "docker") {
    return "docker";
  }
  return "";
}

std::string normalize_repository(std::string_view reference) {
  std::string_view name = reference;
  if (auto at = name.find('@'); at != std::string_view::npos) {
    name = name.substr(0, at);
  }
  name = without_tag(name);
  // The first component is a registry when it looks like a host: it has a '.' or a
  // ':' (a port), or is "localhost"; otherwise the name is on Docker Hub.
  std::string domain;
  std::string path;
  auto slash = name.find('/');
  auto first = name.substr(0, slash);
  if (slash != std::string_view::npos && (first.find('.') != std::string_view::npos ||
                                          first.find(':') != std::string_view::npos || first == "localhost")) {
    domain = std::string(first);
    path = std::string(name.substr(slash + 1));
  } else {
    domain = "docker.io";
    path = std::string(name);
  }
  if (domain == "index.docker.io" || domain == "registry-1.docker.io") {
    domain = "docker.io";
  }
  if (domain == "docker.io" && path.find('/') == std::string::npos) {
    path = "library/" + path;
  }
  return domain + "/" + path;
}

}  // namespace kstate::inventory
