// OpenSSL 3 certificate generation (see pki.hpp). EC P-256 keys keep start-up fast.
#include "tests/emulator/pki.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace kstate::emulator {

namespace {

struct Deleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  void operator()(X509* cert) const { X509_free(cert); }
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter>;
using CertPtr = std::unique_ptr<X509, Deleter>;
using BioPtr = std::unique_ptr<BIO, Deleter>;

Error openssl_error(const std::string& what) {
  return Error(ErrorKind::tls, "OpenSSL: " + what);
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long length = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(length));
}

Result<CertificateAndKey> to_pem(X509* cert, EVP_PKEY* key) {
  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509(cert_bio.get(), cert) ||
      !PEM_write_bio_PrivateKey(key_bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)) {
    return openssl_error("cannot write PEM");
  }
  return CertificateAndKey{bio_text(cert_bio.get()), bio_text(key_bio.get())};
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  if (extension == nullptr) {
    return false;
  }
  bool ok = X509_add_ext(cert, extension, -1) == 1;
  X509_EXTENSION_free(extension);
  return ok;
}

CertPtr new_certificate(EVP_PKEY* key, const std::string& common_name, const std::vector<std::string>& organizations) {
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial_bytes[16];
  RAND_bytes(serial_bytes, sizeof serial_bytes);
  serial_bytes[0] &= 0x7f;
  BIGNUM* serial = BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get()));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 60L * 60 * 24 * 365);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& organization : organizations) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(organization.c_str()),
                               -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                             -1, 0);
  return cert;
}

Result<KeyPtr> read_key(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return openssl_error("cannot read private key");
  }
  return key;
}

Result<CertPtr> read_certificate(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  CertPtr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    return openssl_error("cannot read certificate");
  }
  return cert;
}

}  // namespace

Result<CertificateAndKey> make_certificate_authority(const std::string& common_name) {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) {
    return openssl_error("cannot generate CA key");
  }
  CertPtr cert = new_certificate(key.get(), common_name, {});
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  if (!add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") ||
      !add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash")) {
    return openssl_error("cannot add CA extensions");
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return openssl_error("cannot sign CA certificate");
  }
  return to_pem(cert.get(), key.get());
}

Result<CertificateAndKey> issue_certificate(const CertificateAndKey& ca, const std::string& common_name,
                                            const std::vector<std::string>& organizations, bool server) {
  auto ca_key = read_key(ca.key_pem);
  if (!ca_key) {
    return ca_key.error();
  }
  auto ca_cert = read_certificate(ca.certificate_pem);
  if (!ca_cert) {
    return ca_cert.error();
  }
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) {
    return openssl_error("cannot generate key");
  }
  CertPtr cert = new_certificate(key.get(), common_name, organizations);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert->get()));
  bool ok = add_extension(cert.get(), ca_cert->get(), NID_basic_constraints, "critical,CA:FALSE") &&
            add_extension(cert.get(), ca_cert->get(), NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
            add_extension(cert.get(), ca_cert->get(), NID_ext_key_usage, server ? "serverAuth" : "clientAuth") &&
            add_extension(cert.get(), ca_cert->get(), NID_authority_key_identifier, "keyid:always");
  if (ok && server) {
    ok = add_extension(cert.get(), ca_cert->get(), NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  }
  if (!ok) {
    return openssl_error("cannot add certificate extensions");
  }
  if (X509_sign(cert.get(), ca_key->get(), EVP_sha256()) == 0) {
    return openssl_error("cannot sign certificate");
  }
  return to_pem(cert.get(), key.get());
}

std::string base64_encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                               reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(length));
  return out;
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes));
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : raw) {
    out += hex[byte >> 4];
    out += hex[byte & 15];
  }
  return out;
}

}  // namespace kstate::emulator
