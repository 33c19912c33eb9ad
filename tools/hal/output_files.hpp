// The file each model output is written to under --output (hal run, hal eval): its name with
// characters a file name should not hold as '_', and "_2", "_3" ... where two names would make
// the same file ("a.b" and "a_b" stay apart; "a/b" and "a_b" do not overwrite each other).
#pragma once

#include <cctype>
#include <set>
#include <string>

namespace hal::tool {

// `taken`: the files given so far for this directory.
inline std::string output_file_name(const std::string& name, std::set<std::string>& taken) {
  std::string out;
  for (char c : name)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "output";
  std::string file = out + ".npy";
  for (int n = 2; !taken.insert(file).second; ++n) file = out + "_" + std::to_string(n) + ".npy";
  return file;
}

}  // namespace hal::tool
