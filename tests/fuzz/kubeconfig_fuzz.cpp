// libFuzzer target for the kubeconfig loader (core/kubeconfig.hpp). The loader reads
// files, so each input is written to a private temporary folder: the first byte
// chooses the mode (bit 0: the input is two files, split at the first "\n%%\n" and
// merged through a KUBECONFIG list; bit 1: --context names "fuzz"), the rest is the
// file content. Besides the sanitizers' findings it checks the loader's promises: an
// error has a message, a resolved config has a server and a context, and describe()
// never depends on the bearer token, the password or the client key.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "core/kubeconfig.hpp"

namespace {

void require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

const std::string& folder() {
  static const std::string path = [] {
    std::string pattern = "/tmp/kstate-kubeconfig-fuzz-XXXXXX";
    require(mkdtemp(pattern.data()) != nullptr);
    return pattern;
  }();
  return path;
}

void write(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

// describe() must not depend on the secrets' values (only on whether they are set):
// the same config with other non-empty values describes the same way.
void require_secrets_hidden(const kstate::ClientConfig& config) {
  kstate::ClientConfig other = config;
  for (auto* secret : {&other.token, &other.password, &other.client_key_pem}) {
    if (!secret->empty()) {
      *secret = secret->front() == '\x01' ? "\x02" : "\x01";
    }
  }
  require(config.describe() == other.describe());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Files named by the input are read (certificate-authority, client-key, ...): keep
  // the fuzzer away from devices and pseudo files that never end (/dev/zero, a FIFO).
  for (std::string_view avoided : {"dev", "proc", "sys", "fd"}) {
    if (text.find(avoided) != std::string_view::npos) {
      return 0;
    }
  }
  bool two_files = (data[0] & 1) != 0;
  bool context_flag = (data[0] & 2) != 0;
  std::string first = folder() + "/config";
  std::string second = folder() + "/other";
  kstate::KubeconfigSources sources;
  sources.admin_conf = folder() + "/absent-admin.conf";
  sources.service_account_dir = folder() + "/absent-serviceaccount";
  std::string kubeconfig_list;
  if (two_files) {
    auto separator = text.find("\n%%\n");
    write(first, text.substr(0, separator));
    write(second, separator == std::string_view::npos ? std::string_view() : text.substr(separator + 4));
    kubeconfig_list = first + ":" + second;
  } else {
    write(first, text);
    sources.kubeconfig_flag = first;
  }
  sources.getenv = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBECONFIG" && two_files) {
      return kubeconfig_list;
    }
    return std::nullopt;
  };
  if (context_flag) {
    sources.context = "fuzz";
  }
  auto config = kstate::load_client_config(sources);
  if (!config) {
    require(!config.error().message.empty());
    require(config.error().kind == kstate::ErrorKind::config);
    return 0;
  }
  require(!config->server.empty());
  require(!config->context_name.empty());
  require_secrets_hidden(*config);
  return 0;
}
