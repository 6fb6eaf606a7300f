// Password users and read grants of the emulator (see access.hpp).
#include "tests/emulator/access.hpp"

#include <algorithm>

#include "core/encoding.hpp"

namespace kstate::emulator {

std::vector<PasswordUser> password_users(std::string_view secret) {
  auto password_of = [&](std::string_view user) {
    return encoding::sha256_hex(std::string(user) + ":" + std::string(secret)).substr(0, 32);
  };
  return {
      {"basic-reader", password_of("basic-reader"), {}},
      {"pod-reader", password_of("pod-reader"), {"pods"}},
  };
}

std::optional<std::string> check_basic_auth(const std::vector<PasswordUser>& users, std::string_view base64) {
  auto decoded = encoding::base64_decode(base64);
  if (!decoded) {
    return std::nullopt;
  }
  auto colon = decoded->find(':');
  if (colon == std::string::npos) {
    return std::nullopt;
  }
  std::string_view name(decoded->data(), colon);
  std::string_view password(decoded->data() + colon + 1, decoded->size() - colon - 1);
  for (const auto& user : users) {
    if (user.name == name && user.password == password) {
      return user.name;
    }
  }
  return std::nullopt;
}

ReadGrants read_grants_of(const std::vector<PasswordUser>& users) {
  ReadGrants grants;
  for (const auto& user : users) {
    if (!user.readable.empty()) {
      grants[user.name] = user.readable;
    }
  }
  return grants;
}

bool may_read(const ReadGrants& grants, const std::string& user, const ResourceType& type) {
  auto granted = grants.find(user);
  if (granted == grants.end()) {
    return true;
  }
  const auto& resources = granted->second;
  return std::find(resources.begin(), resources.end(), type.qualified_plural()) != resources.end();
}

}  // namespace kstate::emulator
