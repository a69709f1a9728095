// ptxas run as a program (see cuda_ptxas.h): the PTX written to a private
// temporary folder, ptxas spawned on it (posix_spawn, no shell, so a path
// needs no quoting), the cubin read back, the folder removed on every path.
#include "nvptx/cuda_ptxas.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>  // mkdtemp
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "tiledsl/detail/ir_types.h"

extern char** environ;

namespace tl::nvptx {

namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tiledsl-ptxas-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error("ptxas: cannot make a temporary folder in " + fs::temp_directory_path().string());
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `argv` with stdout and stderr into `log`; its exit status, or -1
// when it could not be started or did not exit normally.
int spawn(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `ptxas --version`'s release ("V13.0.88"), or nullopt when it does not run.
std::optional<std::string> version_of(const std::string& ptxas) {
  TempDir dir;
  if (spawn({ptxas, "--version"}, dir.path / "log") != 0) return std::nullopt;
  std::string out = read_file(dir.path / "log");
  size_t v = out.rfind(" V");
  if (v == std::string::npos) return std::nullopt;
  size_t end = out.find_first_of(" \r\n", v + 1);
  return out.substr(v + 1, end == std::string::npos ? std::string::npos : end - v - 1);
}

// Whether release "V13.0.88" is no newer than a driver of `driver_version`
// (13000): major and minor compared.
bool no_newer_than(const std::string& release, int driver_version) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "V%d.%d", &major, &minor) != 2) return false;
  return major * 1000 + minor * 10 <= driver_version;
}

}  // namespace

std::optional<Ptxas> ptxas_from_environment(int driver_version) {
  const char* env = std::getenv("TILEDSL_PTXAS");
  std::string value = env ? env : "";
  if (value == "0") return std::nullopt;
  const bool found = value.empty();  // looked for, not asked for: none is no error
  std::vector<std::string> tried{value};
  if (found || value == "1") tried = {"ptxas", "/usr/local/cuda/bin/ptxas"};
  for (const auto& p : tried) {
    std::optional<std::string> v;
    try {
      v = version_of(p);
    } catch (const Error&) {  // no temporary folder: it cannot run here
      if (!found) throw;
    }
    if (v && (!found || no_newer_than(*v, driver_version))) return Ptxas{p, *v, found};
  }
  if (found) return std::nullopt;
  std::string list;
  for (const auto& p : tried) list += (list.empty() ? "" : ", ") + p;
  throw Error("TILEDSL_PTXAS=" + value + ": no ptxas runs (tried " + list +
              "); set it to 0 to link with the driver's JIT, or name a ptxas");
}

std::string run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch,
                      const std::string& name, std::string* notes) {
  TempDir dir;
  {
    std::ofstream f(dir.path / "k.ptx", std::ios::binary);
    f << ptx;
    f.close();
    if (!f) throw Error("ptxas: cannot write the PTX of '" + name + "' into " + dir.path.string());
  }
  int rc = spawn({ptxas, "-arch=" + arch, "--warn-on-spills", "-o", (dir.path / "k.cubin").string(),
                  (dir.path / "k.ptx").string()},
                 dir.path / "log");
  std::string cubin = read_file(dir.path / "k.cubin");
  if (rc != 0 || cubin.empty())
    throw Error("ptxas (" + ptxas + " -arch=" + arch + ") failed on '" + name + "'" +
                (rc < 0 ? std::string(": it could not be run") : " (status " + std::to_string(rc) + ")") + ":\n" +
                read_file(dir.path / "log"));
  if (notes) {
    notes->clear();
    std::istringstream log(read_file(dir.path / "log"));
    for (std::string line; std::getline(log, line);)
      if (line.find("Performance Loss") != std::string::npos || line.find("spilled") != std::string::npos)
        *notes += line + "\n";
  }
  return cubin;
}

}  // namespace tl::nvptx
