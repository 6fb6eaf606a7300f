// Who may do what in the emulator besides the admin and read-only tokens and client
// certificates: users with a password (HTTP basic auth, as kube-apiserver's
// --basic-auth-file accepted until 1.19 and authenticating front proxies and some
// distributions still do; systems that take a user's kubeconfig meet it), and users
// who may read only some resources (what a Role granting get/list/watch on them gives),
// so that tests see a 403 on the rest, worded as kube-apiserver words it (recording 43:
// `nodes is forbidden: User "pod-reader" cannot list resource "nodes" in API group ""
// at the cluster scope`). Pure; http_server.cpp checks passwords, ApiServer the grants.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/emulator/catalog.hpp"

namespace kstate::emulator {

struct PasswordUser {
  std::string name;
  std::string password;
  // Resources the user may get, list and watch, as "pods" or "deployments.apps"
  // (ResourceType::qualified_plural); empty: every resource. Password users never write.
  std::vector<std::string> readable;
};

// The emulator's password users, in its kubeconfig as contexts of the same names:
//   basic-reader  reads everything, writes nothing
//   pod-reader    reads pods only (a 403 on nodes, namespaces, ...)
// Their passwords are derived from `secret` (the admin token), so they stay the same
// across restarts with --data-dir without being stored.
std::vector<PasswordUser> password_users(std::string_view secret);

// The user an `Authorization: Basic <base64>` value names, when its password matches.
std::optional<std::string> check_basic_auth(const std::vector<PasswordUser>& users, std::string_view base64);

// User name -> the resources that user may read; users not listed may read everything.
using ReadGrants = std::map<std::string, std::vector<std::string>>;
ReadGrants read_grants_of(const std::vector<PasswordUser>& users);
bool may_read(const ReadGrants& grants, const std::string& user, const ResourceType& type);

}  // namespace kstate::emulator
