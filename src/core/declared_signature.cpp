// Reading an entry point's parameters from kernel source: comments dropped, the source cut into
// tokens (a preprocessor line is one token), the definitions of the entry point found, and
// each parameter classified by its address-space qualifier, pointer and type. Macros and
// typedefs are followed only as far as they can be read for certain.
#include "core/declared_signature.hpp"

#include <array>
#include <cctype>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "core/scalar_type_size.hpp"

namespace hal::detail {
namespace {

using Words = std::vector<std::string_view>;

// What a dialect's parameter lists are made of.
struct Dialect {
  Words entry_markers{};   // words that start a kernel's definition
  Words attributes{};      // words with a parenthesised argument allowed around `void`
  Words buffer_spaces{};   // address-space qualifiers of buffer pointers
  Words local_spaces{};    // of local-memory pointers
  Words private_spaces{};  // of scalars (OpenCL's __private)
  Words qualifiers{};      // ignored for the kind: const, restrict ...
  bool bare_pointers_are_buffers = false;  // CUDA: every pointer parameter is device memory
};

const Dialect kPortable{.entry_markers = {"KERNEL"},
                        .buffer_spaces = {"GLOBAL"},
                        .local_spaces = {"SHARED"},
                        .qualifiers = {"const", "volatile", "restrict", "RESTRICT"}};
const Dialect kOpenClC{.entry_markers = {"__kernel", "kernel"},
                       .attributes = {"__attribute__"},
                       .buffer_spaces = {"__global", "global", "__constant", "constant"},
                       .local_spaces = {"__local", "local"},
                       .private_spaces = {"__private", "private"},
                       .qualifiers = {"const", "volatile", "restrict"}};
const Dialect kCuda{.entry_markers = {"__global__"},
                    .attributes = {"__launch_bounds__"},
                    .qualifiers = {"const", "volatile", "__restrict__", "__restrict"},
                    .bare_pointers_are_buffers = true};

const Dialect* dialect_of(KernelLanguage language) {
  switch (language) {
    case KernelLanguage::portable:
      return &kPortable;
    case KernelLanguage::opencl_c:
      return &kOpenClC;
    case KernelLanguage::cuda:
      return &kCuda;
    case KernelLanguage::native:
      return nullptr;
  }
  return nullptr;
}

bool contains(const Words& words, std::string_view word) {
  for (std::string_view w : words)
    if (w == word) return true;
  return false;
}

bool word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The end of the string or character literal that starts at `at`.
size_t literal_end(std::string_view text, size_t at) {
  const char quote = text[at];
  size_t end = at + 1;
  while (end < text.size() && text[end] != quote && text[end] != '\n')
    end += text[end] == '\\' ? 2 : 1;
  return std::min(end + 1, text.size());
}

// Translation phases 2 and 3: backslash-newlines joined, each comment replaced by a space.
// Literals are copied whole, so comment markers inside them stay text.
std::string without_comments(std::string_view code) {
  std::string joined;
  joined.reserve(code.size());
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '\\' && code.substr(i + 1, 1) == "\n") {
      ++i;
    } else if (code[i] == '\\' && code.substr(i + 1, 2) == "\r\n") {
      i += 2;
    } else {
      joined += code[i];
    }
  }
  std::string out;
  out.reserve(joined.size());
  const std::string_view text = joined;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '"' || text[i] == '\'') {
      const size_t end = literal_end(text, i);
      out.append(text.substr(i, end - i));
      i = end;
    } else if (text.substr(i, 2) == "//") {
      i = std::min(text.find('\n', i), text.size());
      out += ' ';
    } else if (text.substr(i, 2) == "/*") {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
      out += ' ';
    } else {
      out += text[i++];
    }
  }
  return out;
}

struct Token {
  enum class Kind : uint8_t { word, other, directive };
  Kind kind;
  std::string_view text;
};

// Words, single punctuation characters, numbers and literals whole, and each preprocessor
// line as one directive token.
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  bool line_start = true;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') line_start = true;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    const size_t begin = i;
    Token::Kind kind = Token::Kind::other;
    if (c == '#' && line_start) {
      i = std::min(text.find('\n', i), text.size());
      kind = Token::Kind::directive;
    } else if (word_start(c)) {
      while (i < text.size() && word_char(text[i])) ++i;
      kind = Token::Kind::word;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < text.size() && (word_char(text[i]) || text[i] == '.')) ++i;
    } else if (c == '"' || c == '\'') {
      i = literal_end(text, i);
    } else {
      ++i;
    }
    line_start = false;
    tokens.push_back({kind, text.substr(begin, i - begin)});
  }
  return tokens;
}

// Object-like macros by name, each with the values of all its definitions; nullopt stands for
// a value hal cannot know (a function-like macro, one that is #undef'd or -U'd).
using Macros = std::map<std::string, std::vector<std::optional<std::string>>, std::less<>>;

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

void read_directive(std::string_view line, Macros& macros) {
  line = trim(line.substr(1));  // after '#'
  size_t at = 0;
  while (at < line.size() && word_char(line[at])) ++at;
  const std::string_view directive = line.substr(0, at);
  if (directive != "define" && directive != "undef") return;
  line = trim(line.substr(at));
  at = 0;
  while (at < line.size() && word_char(line[at])) ++at;
  if (at == 0) return;
  std::string name(line.substr(0, at));
  const bool function_like = line.substr(at, 1) == "(";
  if (directive == "undef" || function_like)
    macros[name].push_back(std::nullopt);
  else
    macros[name].emplace_back(trim(line.substr(at)));
}

// -D NAME=VALUE and -U NAME, from CompileOptions::defines and the flags.
void read_option_macros(const CompileOptions& options, Macros& macros) {
  auto define = [&](std::string_view text) {
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos)
      macros[std::string(text)].emplace_back("1");
    else
      macros[std::string(text.substr(0, equals))].emplace_back(text.substr(equals + 1));
  };
  for (const std::string& text : options.defines) define(text);
  Words flags;
  for (size_t at = 0; at < options.flags.size();) {
    const size_t end = std::min(options.flags.find_first_of(" \t\n", at), options.flags.size());
    if (end > at) flags.push_back(std::string_view(options.flags).substr(at, end - at));
    at = end + 1;
  }
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string_view flag = flags[i];
    if (flag.starts_with("-D") || flag.starts_with("-U")) {
      std::string_view value = flag.substr(2);
      if (value.empty() && i + 1 < flags.size()) value = flags[++i];
      if (flag[1] == 'D')
        define(value);
      else
        macros[std::string(value)].push_back(std::nullopt);
    }
  }
}

// Simple typedefs (`typedef const float real;`: words only) by the name they define, with
// the words of each definition. Words of other typedefs (structs, pointers, arrays, function
// pointers) are `untrusted`: a name among them may have a definition hal cannot read.
struct Typedefs {
  std::map<std::string_view, std::vector<Words>> simple;
  std::set<std::string_view> untrusted;
};

Typedefs read_typedefs(const std::vector<Token>& tokens) {
  Typedefs typedefs;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].text != "typedef") continue;
    size_t end = i + 1;
    int braces = 0;
    bool simple = true;
    for (; end < tokens.size(); ++end) {
      const Token& token = tokens[end];
      if (token.text == "{") ++braces;
      if (token.text == "}") --braces;
      if (token.text == ";" && braces <= 0) break;
      if (token.kind != Token::Kind::word) simple = false;
    }
    if (simple && end - i >= 3) {
      Words body;
      for (size_t k = i + 1; k + 1 < end; ++k) body.push_back(tokens[k].text);
      typedefs.simple[tokens[end - 1].text].push_back(std::move(body));
    } else {
      for (size_t k = i + 1; k < end && k < tokens.size(); ++k)
        if (tokens[k].kind == Token::Kind::word) typedefs.untrusted.insert(tokens[k].text);
    }
    i = end;
  }
  return typedefs;
}

// More words than any real parameter has: macros that expand into themselves.
constexpr size_t kMaxParameterWords = 64;
// More typedefs than any real scalar parameter goes through.
constexpr int kMaxTypedefSteps = 64;

class SignatureReader {
 public:
  SignatureReader(const Dialect& dialect, const Macros& macros, const Typedefs& typedefs)
      : dialect_(dialect), macros_(macros), typedefs_(typedefs) {}

  // The parameters between an entry point's parentheses; nullopt when they cannot be read.
  std::optional<std::vector<KernelParam>> params(std::span<const Token> list) const {
    std::vector<KernelParam> params;
    if (list.empty()) return params;
    size_t begin = 0;
    for (size_t i = 0; i <= list.size(); ++i) {
      if (i < list.size() && list[i].text != ",") continue;
      std::optional<Words> words = expanded(list.subspan(begin, i - begin));
      if (!words || words->empty()) return std::nullopt;
      if (list.size() == 1 && (*words)[0] == "void") return params;  // f(void)
      std::optional<KernelParam> param = classify(*words);
      if (!param) return std::nullopt;
      params.push_back(std::move(*param));
      begin = i + 1;
    }
    return params;
  }

 private:
  // The words and '*' of one parameter with macros replaced by their values; nullopt for any
  // other token, or a macro whose value is not plain words and '*' in every definition alike.
  std::optional<Words> expanded(std::span<const Token> tokens) const {
    Words words;
    for (const Token& token : tokens) {
      if (token.kind == Token::Kind::directive) return std::nullopt;
      if (token.kind == Token::Kind::other && token.text != "*") return std::nullopt;
      words.push_back(token.text);
    }
    for (int pass = 0; pass < 16; ++pass) {
      Words out;
      bool changed = false;
      for (std::string_view word : words) {
        const auto macro = macros_.find(word);
        if (macro == macros_.end()) {
          out.push_back(word);
          continue;
        }
        const std::optional<std::string>& value = macro->second.front();
        for (const std::optional<std::string>& other : macro->second)
          if (!value || other != value) return std::nullopt;
        for (const Token& token : tokenize(*value)) {
          if (token.kind != Token::Kind::word && token.text != "*") return std::nullopt;
          out.push_back(token.text);
        }
        // A macro that names itself grows on every pass (the preprocessor would stop).
        if (out.size() > kMaxParameterWords) return std::nullopt;
        changed = true;
      }
      words = std::move(out);
      if (!changed) return words;
    }
    return std::nullopt;  // macros that keep expanding into macros
  }

  static std::string spelled(const Words& words) {
    std::string text;
    for (std::string_view word : words) {
      if (!text.empty() && word != "*") text += ' ';
      text += word;
    }
    return text;
  }

  std::optional<KernelParam> classify(Words words) const {
    enum class Space : uint8_t { none, buffer, local, private_ } space = Space::none;
    Words before_star, after_star;
    int stars = 0;
    for (std::string_view word : words) {
      Space qualifier = Space::none;
      if (contains(dialect_.buffer_spaces, word)) qualifier = Space::buffer;
      if (contains(dialect_.local_spaces, word)) qualifier = Space::local;
      if (contains(dialect_.private_spaces, word)) qualifier = Space::private_;
      if (qualifier != Space::none) {
        if (space != Space::none) return std::nullopt;
        space = qualifier;
      } else if (word == "*") {
        ++stars;
      } else if (!contains(dialect_.qualifiers, word)) {
        (stars ? after_star : before_star).push_back(word);
      }
    }
    KernelParam param;
    if (stars > 1 || before_star.empty()) return std::nullopt;
    if (stars == 1) {
      if (after_star.size() > 1) return std::nullopt;
      if (space == Space::buffer || (space == Space::none && dialect_.bare_pointers_are_buffers))
        param.kind = KernelArg::Kind::buffer;
      else if (space == Space::local)
        param.kind = KernelArg::Kind::local_memory;
      else
        return std::nullopt;
      if (!after_star.empty()) param.name = after_star.front();
    } else {
      if (space == Space::buffer || space == Space::local) return std::nullopt;
      // `unsigned n`, `real r`: a last word that is no built-in type names the parameter.
      if (before_star.size() >= 2 && !builtin_scalar_bytes(before_star.back())) {
        param.name = before_star.back();
        before_star.pop_back();
      }
      int budget = kMaxTypedefSteps;
      std::optional<size_t> bytes = scalar_bytes(before_star, budget);
      if (!bytes) return std::nullopt;
      param.scalar_bytes = *bytes;
    }
    if (!param.name.empty()) words.pop_back();
    param.type = spelled(words);
    return param;
  }

 public:
  // The size of a scalar type: built-in, or a typedef whose every definition is one; 0 when
  // those definitions differ in size (typedef float real; / typedef double real;). `budget`
  // bounds the typedefs followed (cycles, definitions in many #if branches).
  std::optional<size_t> scalar_bytes(const Words& type, int& budget) const {
    if (std::optional<size_t> bytes = builtin_scalar_bytes(type)) return bytes;
    if (type.size() != 1 || --budget < 0 || typedefs_.untrusted.contains(type[0]))
      return std::nullopt;
    const auto found = typedefs_.simple.find(type[0]);
    if (found == typedefs_.simple.end()) return std::nullopt;
    std::optional<size_t> common;
    for (const Words& body : found->second) {
      Words target;
      for (std::string_view word : body)
        if (!contains(dialect_.qualifiers, word)) target.push_back(word);
      std::vector<Token> tokens;
      for (std::string_view word : target) tokens.push_back({Token::Kind::word, word});
      std::optional<Words> words = expanded(tokens);
      if (!words) return std::nullopt;
      std::optional<size_t> bytes = scalar_bytes(*words, budget);
      if (!bytes) return std::nullopt;
      common = common && *common != *bytes ? 0 : *bytes;
    }
    return common;
  }

 private:
  const Dialect& dialect_;
  const Macros& macros_;
  const Typedefs& typedefs_;
};

// Two readings of the same entry point (a declaration and its definition, or definitions in
// #if branches) agree when kinds and sizes do; names come from whichever gives them.
bool merge(std::vector<KernelParam>& into, const std::vector<KernelParam>& other) {
  if (into.size() != other.size()) return false;
  for (size_t i = 0; i < into.size(); ++i) {
    if (into[i].kind != other[i].kind || into[i].scalar_bytes != other[i].scalar_bytes)
      return false;
    if (into[i].name.empty()) into[i] = other[i];
  }
  return true;
}

// The first token at or after `at` past attributes: __attribute__((...)), __launch_bounds__(...).
// tokens.size() when an attribute's parentheses do not close.
size_t skip_attributes(const std::vector<Token>& tokens, size_t at, const Dialect& dialect) {
  while (at + 1 < tokens.size() && contains(dialect.attributes, tokens[at].text) &&
         tokens[at + 1].text == "(") {
    int depth = 0;
    for (++at; at < tokens.size(); ++at) {
      if (tokens[at].text == "(") ++depth;
      if (tokens[at].text == ")" && --depth == 0) break;
    }
    if (at == tokens.size()) return at;
    ++at;
  }
  return at;
}

// A source as the reader sees it: its tokens (views into `text`), macros and typedefs.
struct ReadSource {
  ReadSource(const Dialect& dialect, const KernelSource& source, const CompileOptions& options)
      : text(without_comments(source.code)), tokens(tokenize(text)) {
    for (const Token& token : tokens)
      if (token.kind == Token::Kind::directive) read_directive(token.text, macros);
    read_option_macros(options, macros);
    typedefs = read_typedefs(tokens);
    reader.emplace(dialect, macros, typedefs);
  }
  ReadSource(const ReadSource&) = delete;
  ReadSource& operator=(const ReadSource&) = delete;

  const std::string text;
  const std::vector<Token> tokens;
  Macros macros;
  Typedefs typedefs;
  std::optional<SignatureReader> reader;
};

}  // namespace

std::vector<size_t> declared_type_sizes(const KernelSource& source, const CompileOptions& options,
                                        std::span<const std::string> types) {
  std::vector<size_t> sizes(types.size(), 0);
  const Dialect* dialect = dialect_of(source.language);
  if (!dialect) return sizes;
  const ReadSource read(*dialect, source, options);
  for (size_t i = 0; i < types.size(); ++i) {
    Words words;
    for (const Token& token : tokenize(types[i])) {
      if (token.kind != Token::Kind::word) {
        words.clear();
        break;
      }
      words.push_back(token.text);
    }
    int budget = kMaxTypedefSteps;
    if (!words.empty()) sizes[i] = read.reader->scalar_bytes(words, budget).value_or(0);
  }
  return sizes;
}

std::optional<std::vector<KernelParam>> declared_params(const KernelSource& source,
                                                        const CompileOptions& options) {
  const Dialect* dialect = dialect_of(source.language);
  if (!dialect) return std::nullopt;
  const ReadSource read(*dialect, source, options);
  const std::vector<Token>& tokens = read.tokens;
  const SignatureReader& reader = *read.reader;

  std::optional<std::vector<KernelParam>> found;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != Token::Kind::word || !contains(dialect->entry_markers, tokens[i].text))
      continue;
    // marker [attributes] void [attributes] name (
    size_t at = skip_attributes(tokens, i + 1, *dialect);
    if (at >= tokens.size()) return std::nullopt;  // unbalanced: nothing to read
    if (tokens[at].text != "void") continue;
    at = skip_attributes(tokens, at + 1, *dialect);
    if (at >= tokens.size()) return std::nullopt;
    if (at + 1 >= tokens.size() || tokens[at].text != source.name || tokens[at + 1].text != "(")
      continue;
    const size_t open = at + 1;
    size_t close = open + 1;
    for (int depth = 1; close < tokens.size(); ++close) {
      if (tokens[close].text == "(") ++depth;
      if (tokens[close].text == ")" && --depth == 0) break;
    }
    if (close >= tokens.size()) return std::nullopt;
    std::optional<std::vector<KernelParam>> params =
        reader.params(std::span(tokens).subspan(open + 1, close - open - 1));
    if (!params) return std::nullopt;
    if (found && !merge(*found, *params)) return std::nullopt;
    if (!found) found = std::move(params);
    i = close;
  }
  return found;
}

}  // namespace hal::detail
