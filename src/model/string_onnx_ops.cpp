// The ops on string tensors: StringNormalizer, and Cast and CastLike to and from STRING (the
// `run_strings` of those two tensor ops). Strings live on the host, so these run there whatever
// the node's device; a numeric result is made on the node's stream.
#include <locale.h>  // newlocale, freelocale
#include <wctype.h>  // towlower_l, towupper_l
#include <clocale>
#include <set>

#include "hal/ops.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"
#include "model/string_numbers.hpp"
#include "model/utf8.hpp"

namespace hal::model {
namespace {

using Values = std::vector<Value>;

// `x` cast to `to` (nullopt: to strings).
Value cast_value(const OpContext& ctx, const Value& x, std::optional<DType> to) {
  if (const auto* strings = std::get_if<StringTensor>(&x)) {
    if (!to) return *strings;
    return parse_numbers(*strings, *to, ctx.stream());
  }
  const Tensor* tensor = std::get_if<Tensor>(&x);
  if (!tensor || !tensor->defined()) ctx.invalid("input 0 is not a tensor");
  if (to) return cast(*tensor, *to, ctx.stream());
  return StringTensor{tensor->shape(), format_numbers(*tensor, ctx.stream())};
}

// Upper- and lower-casing of UTF-8 text by a C locale's wide-character tables: the node's
// `locale` where this host has it (ONNX leaves the locale to the environment), else C.UTF-8
// (every letter Unicode gives a simple case mapping, no language's own rules), else ASCII.
// Text that is not UTF-8 is left as it is.
class CaseMapper {
 public:
  explicit CaseMapper(const std::string& name) {
    for (const std::string& candidate : {name, name + ".UTF-8", std::string("C.UTF-8")}) {
      if (candidate.empty() || candidate == ".UTF-8") continue;
      locale_ = newlocale(LC_CTYPE_MASK, candidate.c_str(), static_cast<locale_t>(nullptr));
      if (locale_) break;
    }
  }
  ~CaseMapper() {
    if (locale_) freelocale(locale_);
  }
  CaseMapper(const CaseMapper&) = delete;
  CaseMapper& operator=(const CaseMapper&) = delete;

  std::string upper(const std::string& text) const { return map(text, true); }
  std::string lower(const std::string& text) const { return map(text, false); }

 private:
  std::string map(const std::string& text, bool upper) const {
    auto points = utf8_decode(text);
    if (!points) return text;
    for (char32_t& c : *points) {
      if (locale_) {
        const auto wide = static_cast<wint_t>(c);
        c = static_cast<char32_t>(upper ? towupper_l(wide, locale_) : towlower_l(wide, locale_));
      } else if (upper && c >= 'a' && c <= 'z') {
        c -= 'a' - 'A';
      } else if (!upper && c >= 'A' && c <= 'Z') {
        c += 'a' - 'A';
      }
    }
    return utf8_encode(*points);
  }
  locale_t locale_ = nullptr;
};

// Opset 10: drops the elements that are stop words (compared as they are, or lower-cased where
// not is_case_sensitive), then changes the rest's case. Elements are compared whole, as the
// spec says (ONNX's Python reference also splits them at spaces; ONNX Runtime does not).
Values string_normalizer(const OpContext& ctx, const Values& in) {
  const StringTensor& x = ctx.strings(in, 0);
  const std::string action = ctx.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.invalid("case_change_action '" + action + "' (LOWER, UPPER or NONE)");
  const bool case_sensitive = ctx.attr_int("is_case_sensitive", 0) != 0;
  const bool row = x.shape.size() == 2 && x.shape[0] == 1;
  if (x.shape.size() != 1 && !row) ctx.invalid("takes a [C] or [1, C] tensor, not " + describe(x));
  const CaseMapper mapper(ctx.attr_string("locale", ""));
  std::set<std::string, std::less<>> stopwords;
  for (const std::string& word : ctx.attr_strings("stopwords"))
    stopwords.insert(case_sensitive ? word : mapper.lower(word));
  StringTensor out;
  for (const std::string& text : x.data) {
    if (!stopwords.empty() && stopwords.contains(case_sensitive ? text : mapper.lower(text)))
      continue;
    out.data.push_back(action == "LOWER"   ? mapper.lower(text)
                       : action == "UPPER" ? mapper.upper(text)
                                           : text);
  }
  // Everything dropped: one empty string, of shape [1] or [1, 1].
  if (out.data.empty()) out.data.emplace_back();
  const auto count = static_cast<int64_t>(out.data.size());
  out.shape = row ? Shape{1, count} : Shape{count};
  return {std::move(out)};
}

}  // namespace

bool makes_strings(const Node& node) {
  if (!node.domain.empty() || node.op_type != "Cast") return false;
  const auto to = node.attributes.find("to");
  if (to == node.attributes.end()) return false;
  const auto* code = std::get_if<int64_t>(&to->second);
  return code && *code == kOnnxString;
}

Values cast_strings(const OpContext& ctx, const Values& in) {
  const auto to = static_cast<int32_t>(ctx.attr_int("to", 0));
  if (to == kOnnxString) return {cast_value(ctx, in.at(0), std::nullopt)};
  const auto dtype = dtype_from_onnx(to);
  if (!dtype) ctx.unsupported("cast to ONNX type " + onnx_type_name(to) + ", which hal has not");
  return {cast_value(ctx, in.at(0), *dtype)};
}

Values cast_like_strings(const OpContext& ctx, const Values& in) {
  if (in.size() < 2) ctx.invalid("takes two inputs");
  if (std::holds_alternative<StringTensor>(in[1])) return {cast_value(ctx, in[0], std::nullopt)};
  return {cast_value(ctx, in[0], ctx.tensor(in, 1).dtype())};
}

std::vector<OnnxOp> string_onnx_ops() {
  return {
      {"StringNormalizer", 10, nullptr, string_normalizer, nullptr, true},
  };
}

}  // namespace hal::model
