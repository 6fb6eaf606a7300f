// Every imageID form the kubelet reports (dockershim's docker-pullable:// and docker://,
// containerd's and CRI-O's scheme-less repo digest and image ID, an empty one for a
// container not started, and forms kstate does not know), what a --digest may look
// like, which queries match which forms, the runtime of a container, and repository
// normalisation: one table each.
#include "inventory/image_id.hpp"

#include <catch2/catch.hpp>

namespace image_id_test {

using namespace kstate::inventory;

namespace {

const std::string hex_a = "4c0fdaa8b6341bfdeca5f18f7837462c80cff90527ee35ef185571e1c327beac";
const std::string hex_b = "e4720093a3c1381245b53a5a51b417963b3c4472d3f47fc301930a4f3b17666a";
const std::string sha512_hex = std::string(128, 'f');

}  // namespace

TEST_CASE("parse_image_id: every form the kubelet reports", "[inventory][image_id]") {
  struct Row {
    std::string image_id;
    DigestKind kind;
    std::string scheme;
    std::string digest;
    std::string repository;
  };
  const std::vector<Row> rows = {
      // dockershim / cri-dockerd: the repo digest, comparable with RepoDigests
      {"docker-pullable://registry.example.com/team/app@sha256:" + hex_a, DigestKind::repo_digest, "docker-pullable",
       "sha256:" + hex_a, "registry.example.com/team/app"},
      {"docker-pullable://nginx@sha256:" + hex_a, DigestKind::repo_digest, "docker-pullable", "sha256:" + hex_a,
       "nginx"},
      {"docker-pullable://registry.example.com:5000/app@sha256:" + hex_a, DigestKind::repo_digest, "docker-pullable",
       "sha256:" + hex_a, "registry.example.com:5000/app"},
      // dockershim: the local image ID, not a repo digest
      {"docker://sha256:" + hex_b, DigestKind::image_id, "docker", "sha256:" + hex_b, ""},
      // containerd and CRI-O: no scheme
      {"docker.io/library/nginx@sha256:" + hex_a, DigestKind::repo_digest, "", "sha256:" + hex_a,
       "docker.io/library/nginx"},
      {"quay.io/org/app@sha256:" + hex_a, DigestKind::repo_digest, "", "sha256:" + hex_a, "quay.io/org/app"},
      {"localhost:5000/app@sha256:" + hex_a, DigestKind::repo_digest, "", "sha256:" + hex_a, "localhost:5000/app"},
      {"registry.example.com/app:1.2@sha256:" + hex_a, DigestKind::repo_digest, "", "sha256:" + hex_a,
       "registry.example.com/app"},  // a tag next to the digest is dropped
      {"sha256:" + hex_b, DigestKind::image_id, "", "sha256:" + hex_b, ""},
      {"registry.example.com/app@sha512:" + sha512_hex, DigestKind::repo_digest, "", "sha512:" + sha512_hex,
       "registry.example.com/app"},
      // not started
      {"", DigestKind::none, "", "", ""},
      // forms kstate does not know: kept verbatim, no digest
      {"docker://nginx:1.25", DigestKind::unknown, "docker", "", ""},
      {"registry.example.com/app:1.2", DigestKind::unknown, "", "", ""},
      {"sha256:4c0fdaa8", DigestKind::unknown, "", "", ""},                 // too short
      {"sha256:" + std::string(64, 'A'), DigestKind::unknown, "", "", ""},  // upper case is not a digest
      {"md5:" + hex_a.substr(0, 32), DigestKind::unknown, "", "", ""},
      {"@sha256:" + hex_a, DigestKind::unknown, "", "", ""},  // no repository before '@'
      {"docker-pullable://app", DigestKind::unknown, "docker-pullable", "", ""},
  };
  for (const auto& row : rows) {
    INFO(row.image_id);
    auto parsed = parse_image_id(row.image_id);
    CHECK(parsed.kind == row.kind);
    CHECK(parsed.scheme == row.scheme);
    CHECK(parsed.digest == row.digest);
    CHECK(parsed.repository == row.repository);
  }
  CHECK(std::string(to_string(DigestKind::repo_digest)) == "repoDigest");
  CHECK(std::string(to_string(DigestKind::image_id)) == "imageID");
  CHECK(std::string(to_string(DigestKind::unknown)) == "unknown");
}

TEST_CASE("parse_digest_query: a digest or a RepoDigests entry; anything else is a clear error",
          "[inventory][image_id]") {
  auto plain = parse_digest_query("sha256:" + hex_a);
  REQUIRE(plain.ok());
  CHECK(plain->digest == "sha256:" + hex_a);
  CHECK(plain->repository.empty());
  auto repo_digest = parse_digest_query("registry.example.com/app@sha256:" + hex_a);
  REQUIRE(repo_digest.ok());
  CHECK(repo_digest->digest == "sha256:" + hex_a);
  CHECK(repo_digest->repository == "registry.example.com/app");
  CHECK(repo_digest->text == "registry.example.com/app@sha256:" + hex_a);

  for (const auto& bad :
       {std::string("latest"), std::string("sha256:abc"), "SHA256:" + hex_a, "sha256:" + std::string(64, 'G'),
        "@sha256:" + hex_a, std::string("app@latest"), "sha1:" + hex_a.substr(0, 40), std::string("")}) {
    INFO(bad);
    auto parsed = parse_digest_query(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().kind == kstate::ErrorKind::invalid_input);
    CHECK(parsed.error().message.find("--digest") != std::string::npos);
  }
}

TEST_CASE("match_digest: a repo digest matches docker-pullable:// and CRI forms, an image ID docker:// and sha256:",
          "[inventory][image_id]") {
  const auto repo = parse_digest_query("sha256:" + hex_a).value();
  const auto repo_with_name = parse_digest_query("registry.example.com/app@sha256:" + hex_a).value();
  const auto local = parse_digest_query("sha256:" + hex_b).value();
  struct Row {
    std::string image_id;
    DigestMatch repo_match;   // for the query sha256:<a>
    DigestMatch local_match;  // for the query sha256:<b>
  };
  const std::vector<Row> rows = {
      {"docker-pullable://registry.example.com/app@sha256:" + hex_a, DigestMatch::repo_digest, DigestMatch::none},
      // the same content pulled through a mirror: the digest names it, not the place
      {"docker-pullable://mirror.local/app@sha256:" + hex_a, DigestMatch::repo_digest, DigestMatch::none},
      {"registry.example.com/app@sha256:" + hex_a, DigestMatch::repo_digest, DigestMatch::none},
      {"docker://sha256:" + hex_b, DigestMatch::none, DigestMatch::image_id},
      {"sha256:" + hex_b, DigestMatch::none, DigestMatch::image_id},
      {"docker://sha256:" + hex_a, DigestMatch::image_id, DigestMatch::none},
      {"", DigestMatch::none, DigestMatch::none},
      {"docker://nginx:1.25", DigestMatch::none, DigestMatch::none},
      {"registry.example.com/app@sha256:" + hex_b, DigestMatch::none, DigestMatch::repo_digest},
  };
  for (const auto& row : rows) {
    INFO(row.image_id);
    auto parsed = parse_image_id(row.image_id);
    CHECK(match_digest(repo, parsed) == row.repo_match);
    CHECK(match_digest(repo_with_name, parsed) == row.repo_match);
    CHECK(match_digest(local, parsed) == row.local_match);
  }
}

TEST_CASE("runtime_of: the containerID's scheme, else docker for dockershim's imageIDs", "[inventory][image_id]") {
  struct Row {
    std::string container_id;
    std::string image_id;
    std::string runtime;
  };
  const std::vector<Row> rows = {
      {"containerd://0123abcd", "docker.io/library/nginx@sha256:" + hex_a, "containerd"},
      {"cri-o://0123abcd", "quay.io/org/app@sha256:" + hex_a, "cri-o"},
      {"docker://0123abcd", "docker-pullable://nginx@sha256:" + hex_a, "docker"},
      {"", "docker://sha256:" + hex_b, "docker"},
      {"", "docker-pullable://nginx@sha256:" + hex_a, "docker"},
      {"", "sha256:" + hex_b, ""},
      {"", "", ""},
  };
  for (const auto& row : rows) {
    INFO(row.container_id << " " << row.image_id);
    CHECK(runtime_of(row.container_id, parse_image_id(row.image_id)) == row.runtime);
  }
}

TEST_CASE("normalize_repository: the reference rules of Docker and OCI", "[inventory][image_id]") {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"nginx", "docker.io/library/nginx"},
      {"nginx:1.25", "docker.io/library/nginx"},
      {"library/nginx", "docker.io/library/nginx"},
      {"docker.io/nginx", "docker.io/library/nginx"},
      {"docker.io/library/nginx:1.25", "docker.io/library/nginx"},
      {"index.docker.io/library/nginx", "docker.io/library/nginx"},
      {"bitnami/redis:7", "docker.io/bitnami/redis"},
      {"registry.example.com/team/app:1.2", "registry.example.com/team/app"},
      {"registry.example.com:5000/app", "registry.example.com:5000/app"},
      {"localhost/app:dev", "localhost/app"},
      {"localhost:5000/app@sha256:" + hex_a, "localhost:5000/app"},
      {"registry.example.com/app:1.2@sha256:" + hex_a, "registry.example.com/app"},
      {"nginx@sha256:" + hex_a, "docker.io/library/nginx"},
  };
  for (const auto& [reference, expected] : rows) {
    INFO(reference);
    CHECK(normalize_repository(reference) == expected);
  }
}

}  // namespace image_id_test
