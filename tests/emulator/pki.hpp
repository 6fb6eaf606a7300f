// Certificates for the emulator, made with OpenSSL at start: a CA, a serving
// certificate for 127.0.0.1/localhost, and client certificates signed by the CA
// (the kubeconfig's `cert-admin` user). PEM text in, PEM text out.
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"

namespace kstate::emulator {

struct CertificateAndKey {
  std::string certificate_pem;
  std::string key_pem;
};

Result<CertificateAndKey> make_certificate_authority(const std::string& common_name);
// Signs a certificate with the CA. Server certificates get the loopback SANs.
Result<CertificateAndKey> issue_certificate(const CertificateAndKey& ca, const std::string& common_name,
                                            const std::vector<std::string>& organizations, bool server);

std::string base64_encode(std::string_view data);
// Random bytes as hex (tokens).
std::string random_hex(std::size_t bytes);

}  // namespace kstate::emulator
