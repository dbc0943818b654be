// The README as a test: every shell command in its ```sh blocks runs as
// written, in order, in one folder with configs/ beside it, and exits 0; a
// ```yaml block preceded by <!-- file: NAME --> is written to NAME first.
// Commands whose comment says they need a GPU or take minutes, and the
// set-up scripts (which build the project), are skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_support.h"
#include "tests/temp_files.h"

namespace {

using namespace pipeplan::testing;
namespace fs = std::filesystem;

const std::string kReadme = std::string(PIPEPLAN_SOURCE_DIR) + "/README.md";

struct Step {
  std::string command;  // a shell line, or empty for a file
  std::string file;     // the file a yaml block becomes
  std::string text;     // its contents
  int line = 0;         // in README.md
};

// Shell lines (continuations joined) and files, in README order.
std::vector<Step> readme_steps() {
  std::ifstream in(kReadme);
  std::vector<Step> steps;
  std::string line, language, pending_file, block;
  int number = 0, block_start = 0;
  bool inside = false;
  const std::regex file_marker(R"(^<!-- file: (\S+) -->$)");
  while (std::getline(in, line)) {
    ++number;
    std::smatch match;
    if (!inside && std::regex_match(line, match, file_marker)) {
      pending_file = match[1];
      continue;
    }
    if (line.rfind("```", 0) == 0) {
      if (!inside) {
        inside = true;
        language = line.substr(3);
        block.clear();
        block_start = number;
        continue;
      }
      inside = false;
      if (language == "yaml" && !pending_file.empty()) steps.push_back({"", pending_file, block, block_start});
      pending_file.clear();
      continue;
    }
    if (!inside) continue;
    if (language == "yaml") {
      block += line + "\n";
    } else if (language == "sh") {
      if (!steps.empty() && !steps.back().command.empty() && steps.back().command.back() == '\\') {
        steps.back().command.back() = ' ';
        steps.back().command += line;
      } else if (line.find_first_not_of(' ') != std::string::npos) {
        steps.push_back({line, "", "", number});
      }
    }
  }
  return steps;
}

// Why a step does not run here, or empty.
std::string skip_reason(const std::string& command) {
  if (command.rfind("./scripts/", 0) == 0) return "builds the project";
  static const std::regex marked(R"(#.*(needs (a|\d+) GPUs?|takes minutes))");
  std::smatch match;
  if (std::regex_search(command, match, marked)) return match[1];
  return "";
}

TEST(Readme, EveryExampleRunsAsWritten) {
  const std::vector<Step> steps = readme_steps();
  ASSERT_GT(steps.size(), 20u);
  const fs::path dir = temp_path("readme");
  fs::create_directories(dir);
  fs::create_symlink(fs::path(kConfigs), dir / "configs");
  const std::string path = fs::path(kBinary).parent_path().string() + ":" + std::getenv("PATH");
  std::size_t ran = 0, skipped = 0;
  for (const Step& step : steps) {
    if (step.command.empty()) {
      std::ofstream(dir / step.file) << step.text;
      continue;
    }
    const std::string reason = skip_reason(step.command);
    if (!reason.empty()) {
      std::cout << "skipped README.md:" << step.line << " (" << reason << "): " << step.command << "\n";
      ++skipped;
      continue;
    }
    // As CI runs it: OpenMPI refuses root without these (the README says so).
    const std::string script = write_temp("readme-step.sh", step.command + "\n");
    const std::string shell = "cd " + dir.string() + " && PATH=" + path +
                              " OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 bash " + script +
                              " > " + (dir / "out.txt").string() + " 2>&1";
    const int status = std::system(shell.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "README.md:" << step.line << ": " << step.command << "\n" << slurp((dir / "out.txt").string());
    ++ran;
  }
  // Most examples run here; the skipped ones build the project or need GPUs.
  EXPECT_GT(ran, 2 * skipped);
}

}  // namespace
