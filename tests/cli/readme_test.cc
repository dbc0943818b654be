// The README and every page of docs/ as tests: every shell command in a
// page's ```sh blocks runs as written, in order, in a folder of the page's
// own with configs/ beside it, and exits 0; a ```yaml block preceded by
// <!-- file: NAME --> is written to NAME first. Commands whose comment says
// they need a GPU or take minutes, and the set-up scripts (which build the
// project), are skipped. Every page is linked from the README, and every
// relative link leads to a file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan::testing;
namespace fs = std::filesystem;

const fs::path kSource = PIPEPLAN_SOURCE_DIR;

// README.md, then docs/*.md by name.
std::vector<std::string> pages() {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() == ".md") found.push_back("docs/" + entry.path().filename().string());
  }
  std::sort(found.begin(), found.end());
  found.insert(found.begin(), "README.md");
  return found;
}

struct Step {
  std::string command;  // a shell line, or empty for a file
  std::string file;     // the file a yaml block becomes
  std::string text;     // its contents
  int line = 0;         // in its page
};

// Shell lines (continuations joined) and files, in README order.
std::vector<Step> page_steps(const std::string& page) {
  std::ifstream in(kSource / page);
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

class Readme : public ::testing::TestWithParam<std::string> {};

TEST_P(Readme, EveryExampleRunsAsWritten) {
  const std::string& page = GetParam();
  const std::vector<Step> steps = page_steps(page);
  // One directory per page: the pages of one test process must not meet.
  const fs::path dir = temp_path("readme-" + fs::path(page).stem().string());
  fs::create_directories(dir);
  fs::create_symlink(fs::path(kConfigs), dir / "configs");
  const std::string path = fs::path(kBinary).parent_path().string() + ":" + std::getenv("PATH");
  for (const Step& step : steps) {
    if (step.command.empty()) {
      std::ofstream(dir / step.file) << step.text;
      continue;
    }
    const std::string reason = skip_reason(step.command);
    if (!reason.empty()) {
      std::cout << "skipped " << page << ":" << step.line << " (" << reason << "): " << step.command << "\n";
      continue;
    }
    // As CI runs it: OpenMPI refuses root without these (the README says so).
    const std::string script = write_temp("readme-step.sh", step.command + "\n");
    const std::string shell = "cd " + dir.string() + " && PATH=" + path +
                              " OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 bash " + script +
                              " > " + (dir / "out.txt").string() + " 2>&1";
    const int status = std::system(shell.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << page << ":" << step.line << ": " << step.command << "\n"
        << slurp((dir / "out.txt").string());
  }
}

// "docs/plan.md" -> "plan": the test's name.
std::string page_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Pages, Readme, ::testing::ValuesIn(pages()), page_name);

// Most examples run here; the skipped ones build the project, need GPUs or
// take minutes.
TEST(ReadmePages, MostExamplesRunHere) {
  std::size_t runnable = 0, skipped = 0;
  for (const std::string& page : pages()) {
    for (const Step& step : page_steps(page)) {
      if (step.command.empty()) continue;
      ++(skip_reason(step.command).empty() ? runnable : skipped);
    }
  }
  EXPECT_GT(runnable, 50u);
  EXPECT_GT(runnable, 2 * skipped);
}

// Relative links in a page, as written: [text](target).
std::vector<std::string> relative_links(const std::string& page) {
  const std::string text = slurp((kSource / page).string());
  static const std::regex link(R"(\]\(([^)#\s]+)(#[^)]*)?\))");
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
    const std::string target = (*it)[1];
    if (target.find("://") == std::string::npos && target.rfind("mailto:", 0) != 0) found.push_back(target);
  }
  return found;
}

TEST(ReadmePages, EveryPageIsLinkedAndEveryLinkLeadsToAFile) {
  const std::vector<std::string> from_readme = relative_links("README.md");
  for (const std::string& page : pages()) {
    if (page != "README.md") {
      EXPECT_NE(std::find(from_readme.begin(), from_readme.end(), page), from_readme.end())
          << page << " is not linked from README.md";
    }
    for (const std::string& target : relative_links(page)) {
      EXPECT_TRUE(fs::exists((kSource / page).parent_path() / target))
          << page << " links to " << target << ", not a file";
    }
  }
}

}  // namespace
