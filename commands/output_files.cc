#include "commands/output_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "common/error.h"

namespace pipeplan::commands {
namespace {

std::string cannot_write(std::string_view option, const std::string& path) {
  return fmt::format("{}: cannot write '{}'; check the directory exists and is writable", option, path);
}

// The same file however it is spelled (./a, a, dir/../a).
std::filesystem::path identity(const std::string& path) {
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
  return error ? std::filesystem::path(path).lexically_normal() : resolved;
}

}  // namespace

void write_text_file(const std::string& path, std::string_view contents, std::string_view option) {
  std::ofstream out(path, std::ios::binary);
  if (out) out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) throw InputError(cannot_write(option, path));
}

void OutputFiles::add(const std::string& path, std::string contents, std::string_view option) {
  for (const File& file : files_) {
    if (identity(file.path) == identity(path)) {
      throw InputError(fmt::format("{} and {} both name '{}': give each its own file", file.option, option, path));
    }
  }
  files_.push_back({path, std::move(contents), std::string(option)});
}

void OutputFiles::write_all() const {
  std::vector<std::string> written;
  auto remove_written = [&written] {
    std::error_code ignored;
    for (const std::string& aside : written) std::filesystem::remove(aside, ignored);
  };
  for (const File& file : files_) {
    const std::string aside = file.path + ".part";
    std::ofstream out(aside, std::ios::binary);
    if (out.is_open()) written.push_back(aside);
    if (out) out.write(file.contents.data(), static_cast<std::streamsize>(file.contents.size()));
    if (out) out.close();
    if (!out) {
      remove_written();
      throw InputError(cannot_write(file.option, file.path));
    }
  }
  for (std::size_t index = 0; index < files_.size(); ++index) {
    std::error_code error;
    std::filesystem::rename(written[index], files_[index].path, error);
    if (error) {
      remove_written();
      throw InputError(cannot_write(files_[index].option, files_[index].path));
    }
  }
}

}  // namespace pipeplan::commands
