// Reading the framework outputs back for tests/planner/framework_config_test.cc:
// the field lists copied from each framework's config code
// (tests/data/frameworks/), a TOML fragment's keys by a line reader, and a
// YAML override's keys by yaml-cpp.
#pragma once

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace pipeplan::testing {

// `section.key` lines name fields; `section.key = value` lines the values
// a key with a fixed set takes; '#' starts a comment.
struct FieldList {
  std::set<std::string> fields;
  std::map<std::string, std::set<std::string>> values;
};

inline FieldList read_field_list(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  FieldList list;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t equals = line.find(" = ");
    if (equals == std::string::npos) {
      list.fields.insert(line);
    } else {
      list.values[line.substr(0, equals)].insert(line.substr(equals + 3));
    }
  }
  return list;
}

// One key of a fragment with the strings (or scalars) its value holds;
// numbers and booleans are kept as written.
struct ConfigEntry {
  std::string key;  // "section.key"
  std::vector<std::string> values;
};

// The quoted strings of a TOML value, or the bare value when it has none.
inline std::vector<std::string> toml_strings(const std::string& value) {
  std::vector<std::string> strings;
  const std::regex quoted("\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(value.begin(), value.end(), quoted); it != std::sregex_iterator(); ++it) {
    strings.push_back((*it)[1]);
  }
  if (strings.empty() && value.find('[') == std::string::npos) strings.push_back(value);
  return strings;
}

// The TOML the fragments use: `[section]` headers, `key = value` lines,
// arrays that open on the key's line and close on a line of their own.
inline std::vector<ConfigEntry> toml_entries(const std::string& text) {
  std::vector<ConfigEntry> entries;
  std::istringstream lines(text);
  std::string section;
  const std::regex header(R"(^\[([a-z0-9_.]+)\]$)"), assignment(R"(^([a-z0-9_]+) = (.*)$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (line.empty() || line[0] == '#') continue;
    if (std::regex_match(line, match, header)) {
      section = match[1];
    } else if (std::regex_match(line, match, assignment)) {
      std::string value = match[2];
      if (value == "[") {  // a multi-line array, to its closing line
        for (std::string item; std::getline(lines, item) && item != "]";) value += item;
      }
      entries.push_back({section + "." + std::string(match[1]), toml_strings(value)});
    } else {
      ADD_FAILURE() << "not a line of the fragment's TOML: " << line;
    }
  }
  return entries;
}

// module_fqns_per_model_part's lists, one per stage.
inline std::vector<std::vector<std::string>> toml_module_lists(const std::string& text) {
  std::vector<std::vector<std::string>> stages;
  std::istringstream lines(text);
  bool inside = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "module_fqns_per_model_part = [") {
      inside = true;
    } else if (inside && line == "]") {
      break;
    } else if (inside) {
      stages.push_back(toml_strings(line));
    }
  }
  return stages;
}

// Top-level keys, and one level under each mapping ("model.seq_length");
// null values are dropped, sequences give their items.
inline std::vector<ConfigEntry> yaml_entries(const std::string& text) {
  std::vector<ConfigEntry> entries;
  const YAML::Node root = YAML::Load(text);
  EXPECT_TRUE(root.IsMap());
  auto values = [](const YAML::Node& node) {
    std::vector<std::string> items;
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) items.push_back(item.as<std::string>());
    } else if (node.IsScalar()) {
      items.push_back(node.as<std::string>());
    }
    return items;
  };
  for (const auto& top : root) {
    const std::string name = top.first.as<std::string>();
    if (!top.second.IsMap()) {
      entries.push_back({name, values(top.second)});
      continue;
    }
    entries.push_back({name, {}});
    for (const auto& field : top.second) {
      entries.push_back({name + "." + field.first.as<std::string>(), values(field.second)});
    }
  }
  return entries;
}

// Every key the framework has, every value one it takes.
inline void expect_known(const std::vector<ConfigEntry>& entries, const FieldList& list, const std::string& where) {
  EXPECT_FALSE(entries.empty()) << where;
  for (const ConfigEntry& entry : entries) {
    EXPECT_EQ(list.fields.count(entry.key), 1u) << where << ": no field " << entry.key;
    const auto allowed = list.values.find(entry.key);
    if (allowed == list.values.end()) continue;
    for (const std::string& value : entry.values) {
      EXPECT_EQ(allowed->second.count(value), 1u) << where << ": " << entry.key << " takes no " << value;
    }
  }
}

// The value of `key` (its first string), "" where absent.
inline std::string entry_value(const std::vector<ConfigEntry>& entries, const std::string& key) {
  for (const ConfigEntry& entry : entries) {
    if (entry.key == key) return entry.values.empty() ? "" : entry.values.front();
  }
  return "";
}

}  // namespace pipeplan::testing
