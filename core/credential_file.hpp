// Reading and checking credential material wherever it comes from (a kubeconfig, the
// files it names, an exec plugin): bounded, regular files only, and tokens that can go
// into a header as they are. Used by kubeconfig.cpp and credentials.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kstate {

// Credential material (certificates, keys, CAs, token files, exec plugin output) is
// read only from regular files up to this size: a path such as /dev/zero, a FIFO or a
// huge file must not hang kstate or exhaust its memory. PEM files are a few kB.
inline constexpr std::size_t max_credential_bytes = 1024 * 1024;
// A kubeconfig file itself may embed many clusters' CAs: a larger cap, and any file
// kind (`--kubeconfig <(...)` is a pipe).
inline constexpr std::size_t max_kubeconfig_bytes = 16 * 1024 * 1024;

// Reads at most `max_bytes` of a file: a regular one only when `regular_only` (opened
// without blocking, so a FIFO cannot hold kstate up), any kind otherwise (a kubeconfig
// may be a pipe). Longer is an error, not a truncation. Errors as read_credential_file's.
Result<std::string> read_bounded_file(const std::string& path, std::string_view what, std::size_t max_bytes,
                                      bool regular_only);

// Reads a credential file (regular, after following symbolic links, at most
// `max_bytes`). Errors name `what` and the path, e.g. "cannot read client-key of user
// \"admin\" (kubeconfig /root/.kube/config): /dev/zero: not a regular file"; their kind
// is ErrorKind::io when the file cannot be opened or read (missing, permissions: a
// rotation may be under way), ErrorKind::config when it was refused.
Result<std::string> read_credential_file(const std::string& path, std::string_view what,
                                         std::size_t max_bytes = max_credential_bytes);

// Why `token` cannot be sent as a bearer token ("" when it can): a token is one line of
// visible ASCII characters (RFC 6750's b64token and the API server's tokens are a
// subset), so a token file holding several lines (`tokenFile: /etc/shadow`) or a token
// with CR, LF, NUL or other control characters (which would forge HTTP headers) is
// refused. The token itself is never quoted.
std::string token_problem(std::string_view token);
// Why a basic-auth username or password cannot be used ("" when it can): control
// characters are refused (they are sent base64-encoded, but they are never intended).
std::string basic_auth_problem(std::string_view text);

}  // namespace kstate
