// What a container's `imageID` says, as the kubelet reports it, and whether it is a
// build someone asks about (`kstate inventory --digest`). Pure functions, no I/O.
//
// The kubelet copies the runtime's image reference into status.*ContainerStatuses[].imageID:
//   docker-pullable://registry/repo@sha256:<digest>  dockershim / cri-dockerd: the repo digest
//                                                    (the manifest's, what a registry lists
//                                                    in RepoDigests)
//   docker://sha256:<id>                             dockershim: the local image ID (the image
//                                                    config's digest, Docker's `Id`)
//   registry/repo@sha256:<digest>                    containerd, CRI-O: the repo digest
//   sha256:<id>                                      containerd, CRI-O: the local image ID (an
//                                                    image with no repo digest, e.g. imported)
//   ""                                               the container has not started yet
// After any scheme, the rest decides the kind: `repo@algorithm:hex` is a repo digest,
// `algorithm:hex` an image ID; anything else is kept verbatim as unknown.
//
// A digest names content, not a place: the same manifest pulled from a mirror has the
// same digest, so a query matches by digest alone, whatever repository it came with.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kstate::inventory {

enum class DigestKind {
  none,         // empty imageID: not started
  repo_digest,  // a manifest digest, comparable with a registry's RepoDigests
  image_id,     // a local image ID, comparable with the image's Id
  unknown,      // a form kstate does not know; kept verbatim
};
// "none", "repoDigest", "imageID", "unknown" (the JSON output's spelling).
const char* to_string(DigestKind kind);

struct ImageId {
  DigestKind kind = DigestKind::none;
  std::string scheme;      // "docker-pullable", "docker", or "" (CRI runtimes)
  std::string digest;      // "sha256:<hex>"; empty for none and unknown
  std::string repository;  // repo digests only: "registry.example.com/app" (a tag, if any, dropped)
};
ImageId parse_image_id(std::string_view image_id);

// Whether text is `algorithm:hex` with a known algorithm and the right length:
// sha256 (64 lowercase hex digits) or sha512 (128), as the OCI image spec registers.
bool is_digest(std::string_view text);

// A build someone asks about: `sha256:<hex>`, or a RepoDigests entry
// `registry/repo@sha256:<hex>` (its repository is kept for messages, not for matching).
struct DigestQuery {
  std::string digest;
  std::string repository;
  std::string text;  // as given
};
Result<DigestQuery> parse_digest_query(std::string_view text);

enum class DigestMatch {
  none,
  repo_digest,  // the query is the container's repo digest
  image_id,     // the query is the container's local image ID
};
DigestMatch match_digest(const DigestQuery& query, const ImageId& image_id);

// The runtime a container ran on, from its containerID ("containerd://...",
// "cri-o://...", "docker://...") or, without one, from the imageID's scheme
// ("docker-pullable"/"docker" -> "docker"); "" when neither says.
std::string runtime_of(std::string_view container_id, const ImageId& image_id);

// A repository name as the Docker/OCI reference rules normalise it, so that the
// reference a pod asked for and the one the runtime reports compare equal:
// "nginx:1.25" -> "docker.io/library/nginx", "index.docker.io/x/y" -> "docker.io/x/y",
// "registry:5000/app@sha256:..." -> "registry:5000/app". Tag and digest are dropped.
std::string normalize_repository(std::string_view reference);

}  // namespace kstate::inventory
