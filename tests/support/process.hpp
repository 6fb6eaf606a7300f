// Running programs from tests: `run_process` runs a command to completion
// (argv, extra environment, optional stdin) and captures stdout, stderr and the
// exit code, killing it when the timeout passes; `BackgroundProcess` starts one
// that keeps running (a daemon, the emulator), lets the test read its stdout
// line by line, and kills it at the latest when destroyed.
//
//   auto result = kstate::testing::run_process({"kubectl", "version", "--client"});
//   CHECK(result.exit_code == 0);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kstate::testing {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128+signal when killed by a signal
  std::string out;
  std::string err;
  bool timed_out = false;
};

struct RunOptions {
  std::map<std::string, std::string> env;  // added to (or overriding) the test's environment
  std::optional<std::string> stdin_data;   // nothing: stdin is /dev/null
  std::chrono::milliseconds timeout{60000};
  std::filesystem::path working_directory;  // empty: the test's
};

ProcessResult run_process(const std::vector<std::string>& argv, const RunOptions& options = {});

// True when `program` (a path or a name looked up in PATH) can be executed.
bool program_available(const std::string& program);

class BackgroundProcess {
 public:
  BackgroundProcess() = default;
  // Starts argv with stdout captured (readable with read_line) and stderr inherited.
  // Throws std::runtime_error when the program cannot be started.
  BackgroundProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});
  ~BackgroundProcess();
  BackgroundProcess(BackgroundProcess&& other) noexcept;
  BackgroundProcess& operator=(BackgroundProcess&& other) noexcept;
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // The next line of stdout (without the newline), or nullopt on timeout/EOF.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Sends `signal`, waits up to `grace` for exit, then SIGKILLs. Returns the exit code as in ProcessResult.
  int stop(int signal, std::chrono::milliseconds grace = std::chrono::seconds(5));
  int kill();  // SIGKILL now

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;
  int exit_code_ = -1;
};

}  // namespace kstate::testing
