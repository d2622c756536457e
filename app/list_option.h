// An option that takes a list: "--windows 240,480" or "--windows 240 480". CLI11's own delimiter
// drops empty items, so "240,,480" and "h100," passed as if nothing were wrong, and a lone ","
// took the next argument ("--gpus , --tp 1" read "--tp" as a GPU). Here each argument is split on
// commas and refused whole when an item is empty or fails one of the item checks, which are the
// checks a single value of the option would have.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace metronome::cli {

// The comma-separated items of one argument, empty ones included.
inline std::vector<std::string> list_items(const std::string& arg) {
  std::vector<std::string> items(1);
  for (const char c : arg) {
    if (c == ',') {
      items.emplace_back();
    } else {
      items.back() += c;
    }
  }
  return items;
}

// A list names each value once (`--windows 240 240` would price one candidate twice and rank it
// against itself): why the values break it, or "" when they do not.
inline std::string repeated_value(const std::vector<std::string>& values) {
  for (auto v = values.begin(); v != values.end(); ++v) {
    if (std::find(values.begin(), v, *v) != v) {
      return *v + " is given twice (expected each value once)";
    }
  }
  return {};
}

// `out` (which keeps its default unless the option is given) must outlive the parse. For integers
// the item checks must admit decimal digits only (kDecimalInteger first).
template <class T>
CLI::Option* add_list_option(CLI::App& cmd, const std::string& name, std::vector<T>& out,
                             const std::string& help,
                             std::vector<CLI::Validator> item_checks = {}) {
  static_assert(std::is_same_v<T, std::string> || std::is_same_v<T, int64_t>);
  std::string type;
  for (const CLI::Validator& v : item_checks) {
    if (!v.get_description().empty()) type += (type.empty() ? "" : ":") + v.get_description();
  }
  const CLI::Validator each_item(
      [item_checks](std::string& arg) -> std::string {
        for (std::string item : list_items(arg)) {
          if (item.empty()) {
            return "expected comma-separated items, none of them empty, got \"" + arg + "\"";
          }
          for (const CLI::Validator& v : item_checks) {
            if (std::string error = v(item); !error.empty()) return error;
          }
        }
        return {};
      },
      "");
  auto parse = [&out, name](const std::vector<std::string>& args) {
    std::vector<std::string> items;
    for (const std::string& arg : args) {
      for (std::string& item : list_items(arg)) items.push_back(std::move(item));
    }
    if (std::string why = repeated_value(items); !why.empty()) {
      throw CLI::ValidationError(name, why);
    }
    out.clear();
    for (std::string& item : items) {
      if constexpr (std::is_same_v<T, std::string>) {
        out.push_back(std::move(item));
      } else {
        T v{};
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (ec != std::errc() || end != item.data() + item.size()) {
          throw CLI::ValidationError(name, "expected a decimal integer, got \"" + item + "\"");
        }
        out.push_back(v);
      }
    }
  };
  return cmd.add_option_function<std::vector<std::string>>(name, parse, help)
      ->check(each_item)
      ->type_name((type.empty() ? "TEXT" : type) + "[,...]");
}

}  // namespace metronome::cli
