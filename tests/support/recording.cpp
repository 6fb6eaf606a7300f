// Loading the kube-apiserver recordings (see recording.hpp).
#include "tests/support/recording.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "core/json.hpp"
#include "tests/support/temp_dir.hpp"

namespace kstate::testing {
namespace {

// A body as text: recorded JSON bodies are objects, other bodies strings.
std::string text_of(const json::Value* body) {
  if (body == nullptr || body->IsNull()) {
    return {};
  }
  return body->IsString() ? std::string(body->GetString(), body->GetStringLength()) : json::dump(*body);
}

}  // namespace

Recording recording(int number) {
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "%02d-", number);
  const std::filesystem::path folder =
      std::filesystem::path(KSTATE_SOURCE_DIR) / "tests" / "emulator" / "recordings" / "kube-apiserver-1.32";
  std::filesystem::path file;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) {
      file = entry.path();
    }
  }
  if (file.empty()) {
    throw std::runtime_error("no recording " + std::string(prefix) + "* in " + folder.string());
  }
  auto document = json::parse(read_file(file));
  if (!document.ok()) {
    throw std::runtime_error(file.string() + ": " + document.error().message);
  }
  const json::Value& root = document.value();
  Recording result;
  result.title = std::string(json::string_or(json::find(root, "title"), ""));
  result.method = std::string(json::string_or(json::find_path(root, {"request", "method"}), ""));
  result.path = std::string(json::string_or(json::find_path(root, {"request", "path"}), ""));
  result.request_body = text_of(json::find_path(root, {"request", "body"}));
  if (const json::Value* status = json::find_path(root, {"response", "status"}); status != nullptr && status->IsInt()) {
    result.status = status->GetInt();
  }
  if (const json::Value* headers = json::find_path(root, {"response", "headers"});
      headers != nullptr && headers->IsObject()) {
    for (const auto& member : headers->GetObject()) {
      std::string name(member.name.GetString(), member.name.GetStringLength());
      for (auto& c : name) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      result.headers.emplace_back(std::move(name), text_of(&member.value));
    }
  }
  result.body = text_of(json::find_path(root, {"response", "body"}));
  return result;
}

}  // namespace kstate::testing
