// Crash-safe files for --data-dir: write to a temporary file, fsync it, rename
// over the target and fsync the directory, so a crash leaves either the old or
// the new content, never a torn file.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.hpp"

namespace kstate::emulator {

Status write_file_atomically(const std::filesystem::path& path, std::string_view content, unsigned mode = 0600);
Result<std::string> read_file(const std::filesystem::path& path);

}  // namespace kstate::emulator
