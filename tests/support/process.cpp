// fork/exec with pipes and poll (see process.hpp).
#include "tests/support/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace kstate::testing {

namespace {

using Clock = std::chrono::steady_clock;

int decode_status(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return -1;
}

// Builds "KEY=VALUE" strings: the current environment with `extra` applied.
std::vector<std::string> make_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> result;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    auto key = text.substr(0, text.find('='));
    if (extra.count(key) == 0) {
      result.push_back(std::move(text));
    }
  }
  for (const auto& [key, value] : extra) {
    result.push_back(key + "=" + value);
  }
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& text : strings) {
    result.push_back(text.data());
  }
  result.push_back(nullptr);
  return result;
}

// Child side of fork: wire fds, exec, report failure through exit code 127.
[[noreturn]] void exec_child(std::vector<std::string> argv, std::vector<std::string> env, int stdin_fd, int stdout_fd,
                             int stderr_fd, const std::filesystem::path& working_directory) {
  if (stdin_fd >= 0) {
    dup2(stdin_fd, STDIN_FILENO);
  }
  if (stdout_fd >= 0) {
    dup2(stdout_fd, STDOUT_FILENO);
  }
  if (stderr_fd >= 0) {
    dup2(stderr_fd, STDERR_FILENO);
  }
  if (!working_directory.empty() && chdir(working_directory.c_str()) != 0) {
    _exit(127);
  }
  setpgid(0, 0);  // own process group, so a timeout kill takes its children too
  auto argv_pointers = pointers(argv);
  auto env_pointers = pointers(env);
  execvpe(argv_pointers[0], argv_pointers.data(), env_pointers.data());
  _exit(127);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) {
    throw std::invalid_argument("run_process: empty argv");
  }
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  auto env = make_environment(options.env);
  pid_t pid = fork();
  if (pid < 0) {
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    int null_fd = -1;
    if (!options.stdin_data) {
      null_fd = open("/dev/null", O_RDONLY);
    }
    exec_child(argv, env, options.stdin_data ? in_pipe[0] : null_fd, out_pipe[1], err_pipe[1],
               options.working_directory);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  int stdin_fd = in_pipe[1];
  if (!options.stdin_data) {
    close(stdin_fd);
    stdin_fd = -1;
  } else {
    fcntl(stdin_fd, F_SETFL, O_NONBLOCK);
  }
  ProcessResult result;
  size_t stdin_written = 0;
  auto deadline = Clock::now() + options.timeout;
  int out_fd = out_pipe[0];
  int err_fd = err_pipe[0];
  while (out_fd >= 0 || err_fd >= 0) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (remaining <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      break;
    }
    std::vector<pollfd> fds;
    if (out_fd >= 0) {
      fds.push_back({out_fd, POLLIN, 0});
    }
    if (err_fd >= 0) {
      fds.push_back({err_fd, POLLIN, 0});
    }
    if (stdin_fd >= 0) {
      fds.push_back({stdin_fd, POLLOUT, 0});
    }
    int ready = poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(remaining, 1000)));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    for (const auto& entry : fds) {
      if (entry.revents == 0) {
        continue;
      }
      if (entry.fd == stdin_fd) {
        const std::string& data = *options.stdin_data;
        ssize_t n = write(stdin_fd, data.data() + stdin_written, data.size() - stdin_written);
        if (n > 0) {
          stdin_written += static_cast<size_t>(n);
        }
        if (n < 0 || stdin_written == data.size()) {
          close(stdin_fd);
          stdin_fd = -1;
        }
        continue;
      }
      char buffer[65536];
      ssize_t n = read(entry.fd, buffer, sizeof buffer);
      if (n > 0) {
        (entry.fd == out_fd ? result.out : result.err).append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(entry.fd);
        (entry.fd == out_fd ? out_fd : err_fd) = -1;
      }
    }
  }
  for (int fd : {out_fd, err_fd, stdin_fd}) {
    if (fd >= 0) {
      close(fd);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = decode_status(status);
  return result;
}

bool program_available(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return access(program.c_str(), X_OK) == 0;
  }
  const char* path = std::getenv("PATH");
  std::string directories = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= directories.size()) {
    auto colon = directories.find(':', start);
    auto directory = directories.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!directory.empty() && access((directory + "/" + program).c_str(), X_OK) == 0) {
      return true;
    }
    if (colon == std::string::npos) {
      break;
    }
    start = colon + 1;
  }
  return false;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::map<std::string, std::string>& env) {
  if (argv.empty()) {
    throw std::invalid_argument("BackgroundProcess: empty argv");
  }
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  auto environment = make_environment(env);
  pid_ = fork();
  if (pid_ < 0) {
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    exec_child(argv, environment, null_fd, out_pipe[1], -1, {});
  }
  close(out_pipe[1]);
  stdout_fd_ = out_pipe[0];
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0) {
    kill();
  }
  if (stdout_fd_ >= 0) {
    close(stdout_fd_);
  }
}

BackgroundProcess::BackgroundProcess(BackgroundProcess&& other) noexcept
    : pid_(other.pid_),
      stdout_fd_(other.stdout_fd_),
      buffered_(std::move(other.buffered_)),
      exit_code_(other.exit_code_) {
  other.pid_ = -1;
  other.stdout_fd_ = -1;
}

BackgroundProcess& BackgroundProcess::operator=(BackgroundProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) {
      kill();
    }
    if (stdout_fd_ >= 0) {
      close(stdout_fd_);
    }
    pid_ = other.pid_;
    stdout_fd_ = other.stdout_fd_;
    buffered_ = std::move(other.buffered_);
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
    other.stdout_fd_ = -1;
  }
  return *this;
}

bool BackgroundProcess::running() {
  if (pid_ <= 0) {
    return false;
  }
  int status = 0;
  pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    exit_code_ = decode_status(status);
    pid_ = -1;
    return false;
  }
  return true;
}

std::optional<std::string> BackgroundProcess::read_line(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    auto newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    if (stdout_fd_ < 0) {
      return std::nullopt;
    }
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (remaining <= 0) {
      return std::nullopt;
    }
    pollfd entry{stdout_fd_, POLLIN, 0};
    int ready = poll(&entry, 1, static_cast<int>(remaining));
    if (ready <= 0) {
      continue;
    }
    char buffer[4096];
    ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n <= 0) {
      close(stdout_fd_);
      stdout_fd_ = -1;
      continue;
    }
    buffered_.append(buffer, static_cast<size_t>(n));
  }
}

int BackgroundProcess::stop(int signal, std::chrono::milliseconds grace) {
  if (pid_ <= 0) {
    return exit_code_;
  }
  ::kill(pid_, signal);
  auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    if (!running()) {
      return exit_code_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return kill();
}

int BackgroundProcess::kill() {
  if (pid_ <= 0) {
    return exit_code_;
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  exit_code_ = decode_status(status);
  pid_ = -1;
  return exit_code_;
}

}  // namespace kstate::testing
