// Reading the SVG the chart writer produces, for its tests: a small XML
// reader (well-formedness, elements in document order), attribute and
// tooltip lookups, tick labels back to values, finiteness of coordinates.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::testing::svg_test {

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;  // values as written (escaped)
  std::string text;                               // character data directly inside
  int parent = -1;
};

inline bool valid_entity(std::string_view xml, std::size_t at) {
  for (std::string_view entity : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
    if (xml.substr(at, entity.size()) == entity) return true;
  }
  return false;
}

inline bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ':' || c == '_'; }

inline std::string read_name(std::string_view xml, std::size_t& i) {
  const std::size_t start = i;
  while (i < xml.size() && name_char(xml[i])) ++i;
  return std::string(xml.substr(start, i - start));
}

inline void skip_space(std::string_view xml, std::size_t& i) {
  while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i]))) ++i;
}

// Reads the attributes and the end of a start tag; false on any syntax error
// (unquoted or unterminated values, '<' or a bare '&' inside, duplicates).
inline bool read_attributes(std::string_view xml, std::size_t& i, Element& element, bool& empty) {
  while (true) {
    skip_space(xml, i);
    if (i >= xml.size()) return false;
    if (xml[i] == '>' || xml.substr(i, 2) == "/>") {
      empty = xml[i] == '/';
      i += empty ? 2 : 1;
      return true;
    }
    const std::string name = read_name(xml, i);
    if (name.empty() || i + 1 >= xml.size() || xml[i] != '=' || (xml[i + 1] != '"' && xml[i + 1] != '\'')) {
      return false;
    }
    const char quote = xml[i + 1];
    const std::size_t end = xml.find(quote, i + 2);
    if (end == std::string_view::npos) return false;
    const std::string_view value = xml.substr(i + 2, end - i - 2);
    for (std::size_t k = 0; k < value.size(); ++k) {
      if (value[k] == '<' || (value[k] == '&' && !valid_entity(value, k))) return false;
    }
    if (!element.attributes.emplace(name, std::string(value)).second) return false;
    i = end + 1;
  }
}

// The elements of xml in document order, or nothing unless it is one
// well-formed element (tags balance, one root, quotes balanced, entities valid).
inline std::optional<std::vector<Element>> parse_xml(std::string_view xml) {
  std::vector<Element> elements;
  std::vector<int> open;
  int roots = 0;
  for (std::size_t i = 0; i < xml.size();) {
    if (xml[i] != '<') {
      if (xml[i] == '&' && !valid_entity(xml, i)) return std::nullopt;
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[i]))) return std::nullopt;
      if (!open.empty()) elements[static_cast<std::size_t>(open.back())].text += xml[i];
      ++i;
      continue;
    }
    if (xml.substr(i, 2) == "</") {
      i += 2;
      const std::string name = read_name(xml, i);
      skip_space(xml, i);
      if (open.empty() || i >= xml.size() || xml[i] != '>') return std::nullopt;
      if (elements[static_cast<std::size_t>(open.back())].name != name) return std::nullopt;
      open.pop_back();
      ++i;
      continue;
    }
    ++i;
    Element element;
    element.name = read_name(xml, i);
    element.parent = open.empty() ? -1 : open.back();
    bool empty = false;
    if (element.name.empty() || !read_attributes(xml, i, element, empty)) return std::nullopt;
    if (open.empty()) ++roots;
    elements.push_back(std::move(element));
    if (!empty) open.push_back(static_cast<int>(elements.size()) - 1);
  }
  if (!open.empty() || roots != 1) return std::nullopt;
  return elements;
}

inline std::string unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    bool replaced = false;
    for (const auto& [entity, c] : {std::pair<std::string_view, char>{"&amp;", '&'},
                                    {"&lt;", '<'},
                                    {"&gt;", '>'},
                                    {"&quot;", '"'},
                                    {"&apos;", '\''}}) {
      if (text.substr(i, entity.size()) == entity) {
        out += c;
        i += entity.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i];
  }
  return out;
}

inline std::string attribute(const Element& element, const std::string& name) {
  const auto it = element.attributes.find(name);
  return it == element.attributes.end() ? std::string() : it->second;
}

inline double number(const Element& element, const std::string& name) { return std::stod(attribute(element, name)); }

// Elements named `name` whose attribute `key` is `value` (any, when key is empty).
inline std::vector<const Element*> select(const std::vector<Element>& elements, std::string_view name,
                                   const std::string& key = "", const std::string& value = "") {
  std::vector<const Element*> found;
  for (const Element& element : elements) {
    if (element.name == name && (key.empty() || attribute(element, key) == value)) found.push_back(&element);
  }
  return found;
}

// The first <title> child of elements[index], unescaped.
inline std::string tooltip(const std::vector<Element>& elements, const Element& parent) {
  const int index = static_cast<int>(&parent - elements.data());
  for (const Element& element : elements) {
    if (element.name == "title" && element.parent == index) return unescape(element.text);
  }
  return "";
}

inline std::vector<Element> parsed(const std::string& svg) {
  auto elements = parse_xml(svg);
  EXPECT_TRUE(elements.has_value()) << svg;
  return elements.value_or(std::vector<Element>{});
}

// A tick label back to its value: "1.5k", "2M", "1e-3", "2^20".
inline double tick_value(const std::string& label) {
  if (label.rfind("2^", 0) == 0) return std::ldexp(1.0, std::stoi(label.substr(2)));
  const std::map<char, double> suffixes{{'k', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}};
  const auto it = suffixes.find(label.back());
  if (it != suffixes.end()) return std::stod(label.substr(0, label.size() - 1)) * it->second;
  return std::stod(label);
}

inline std::vector<std::string> tick_labels(const std::vector<Element>& elements, const std::string& axis_class) {
  std::vector<std::string> labels;
  for (const Element* element : select(elements, "text", "class", axis_class)) labels.push_back(element->text);
  return labels;
}

inline std::vector<double> tick_values(const std::vector<Element>& elements, const std::string& axis_class) {
  std::vector<double> values;
  for (const std::string& label : tick_labels(elements, axis_class)) values.push_back(tick_value(label));
  return values;
}

// Every coordinate and length written parses as a finite number, and the
// text never spells "nan" or "inf".
inline void expect_finite(const std::string& svg, const std::vector<Element>& elements) {
  std::string lower = svg;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  EXPECT_EQ(lower.find("nan"), std::string::npos);
  EXPECT_EQ(lower.find("inf"), std::string::npos);
  for (const Element& element : elements) {
    for (const char* key : {"x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height", "font-size"}) {
      const std::string value = attribute(element, key);
      if (!value.empty()) {
        EXPECT_TRUE(std::isfinite(std::stod(value))) << element.name << " " << key << "=" << value;
      }
    }
    std::string points = attribute(element, "points");
    std::replace(points.begin(), points.end(), ',', ' ');
    std::size_t at = 0;
    while (at < points.size()) {
      std::size_t used = 0;
      EXPECT_TRUE(std::isfinite(std::stod(points.substr(at), &used))) << points;
      at += used;
      while (at < points.size() && points[at] == ' ') ++at;
    }
  }
}

// Labels step evenly by 1, 2 or 5 times a power of ten, 4 to 8 of them,
// and the outer ones enclose [lo, hi].
inline void expect_nice_ticks(const std::vector<double>& ticks, double lo, double hi) {
  ASSERT_GE(ticks.size(), 4u) << lo << ".." << hi;
  ASSERT_LE(ticks.size(), 8u) << lo << ".." << hi;
  const double step = ticks[1] - ticks[0];
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6) << step;
  for (std::size_t i = 1; i < ticks.size(); ++i) EXPECT_NEAR(ticks[i] - ticks[i - 1], step, step * 1e-6);
  EXPECT_LE(ticks.front(), lo + step * 1e-6);
  EXPECT_GE(ticks.back(), hi - step * 1e-6);
  EXPECT_LT(ticks.back() - step, hi) << "no tick beyond the one that encloses the data";
  EXPECT_GT(ticks.front() + step, lo);
}

}  // namespace pipeplan::testing::svg_test
