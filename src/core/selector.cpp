#include "hal/visible_devices.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <optional>

#include "core/text.hpp"
#include "hal/error.hpp"
#include "hal/plugin_discovery.hpp"

namespace hal {
namespace {

using detail::to_lower;
using detail::trim;
using detail::without_dashes;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool all_of(std::string_view text, int (*predicate)(int)) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [predicate](char c) {
    return predicate(static_cast<unsigned char>(c)) != 0;
  });
}

// A decimal index, bounded by its value, not its digits ("0000000001" is 1): at most
// UINT32_MAX, the largest index a backend gives (plugin.h counts devices in 32 bits).
std::optional<uint64_t> parse_index(const std::string& digits) {
  uint32_t index = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return index;
}

// A plugin that did not load and why, naming its file once (most reasons name it already).
std::string why_not_loaded(const PluginInfo& plugin) {
  if (plugin.reason.find(plugin.path) != std::string::npos) return plugin.reason;
  return plugin.path + ": " + plugin.reason;
}

// For a selector's unknown backend, which may be a plugin's: the plugins that did not load and
// why (only the one that names `backend`, where one does; the first few otherwise); nothing
// when every plugin loaded. Asked only on this error path: the registry has loaded them by then.
std::string plugins_not_loaded(const std::string& backend) {
  constexpr size_t kListed = 3;
  std::vector<std::string> failed;
  for (const PluginInfo& plugin : plugins()) {
    if (plugin.loaded) continue;
    if (plugin.name == backend) return "; its plugin did not load: " + why_not_loaded(plugin);
    failed.push_back(why_not_loaded(plugin));
  }
  if (failed.empty()) return "";
  std::string list;
  for (size_t i = 0; i < std::min(failed.size(), kListed); ++i) list += (i ? "; " : "") + failed[i];
  if (failed.size() > kListed) list += "; and " + std::to_string(failed.size() - kListed) + " more";
  return "; plugins that did not load (see `hal plugins`): " + list;
}

uint64_t device_index(const DeviceInfo& info) {
  const size_t colon = info.id.find(':');
  return colon == std::string::npos ? 0 : std::stoull(info.id.substr(colon + 1));
}

}  // namespace

DeviceSelector DeviceSelector::parse(std::string_view text) {
  DeviceSelector selector;
  selector.text_ = std::string(text);
  auto fail = [&](const std::string& what) -> Error {
    return Error(ErrorCode::InvalidArgument,
                 "device selector '" + std::string(text) + "': " + what +
                     " (expected terms like 'cpu:*', 'cuda:0,1', 'opencl:gpu', '!sim:3', "
                     "separated by ';')");
  };
  if (trim(text).empty()) throw fail("it is empty");

  for (std::string_view raw_term : split(text, ';')) {
    std::string_view term_text = trim(raw_term);
    if (term_text.empty()) throw fail("it has an empty term");
    Term term;
    if (term_text.front() == '!') {
      term.discard = true;
      term_text = trim(term_text.substr(1));
    }
    const size_t colon = term_text.find(':');
    if (colon == std::string_view::npos)
      throw fail("term '" + std::string(term_text) + "' has no ':' between backend and devices");
    term.backend = to_lower(trim(term_text.substr(0, colon)));
    if (term.backend != "*" && !detail::is_backend_name(term.backend))
      throw fail("term '" + std::string(term_text) + "' names backend '" + term.backend +
                 "'; a backend is a name such as 'cuda', or '*'");

    for (std::string_view raw_device : split(term_text.substr(colon + 1), ',')) {
      const std::string token = to_lower(trim(raw_device));
      DeviceTerm device;
      if (token == "*") {
        device.kind = DeviceTerm::Kind::any;
      } else if (all_of(token, &isdigit)) {
        const std::optional<uint64_t> index = parse_index(token);
        if (!index)
          throw fail("device index '" + token + "' is too large (at most " +
                     std::to_string(std::numeric_limits<uint32_t>::max()) + ")");
        device.kind = DeviceTerm::Kind::index;
        device.index = *index;
      } else if (token == "cpu" || token == "gpu" || token == "accelerator") {
        device.kind = DeviceTerm::Kind::device_kind;
        device.device_kind = token == "cpu"   ? DeviceKind::cpu
                             : token == "gpu" ? DeviceKind::gpu
                                              : DeviceKind::accelerator;
      } else if (const std::string hex = without_dashes(token);
                 all_of(hex, &isxdigit) && !all_of(hex, &isdigit) && hex.size() >= 4) {
        // Digits alone read as an index or a range ("10-13"), never as a UUID prefix.
        device.kind = DeviceTerm::Kind::uuid_prefix;
        device.uuid_prefix = hex;
      } else {
        throw fail("in term '" + std::string(term_text) + "', device '" + token +
                   "' is not '*', an index, 'cpu', 'gpu', 'accelerator' or a UUID prefix of at "
                   "least 4 hex digits that are not all decimal");
      }
      term.devices.push_back(std::move(device));
    }
    selector.terms_.push_back(std::move(term));
  }
  return selector;
}

bool DeviceSelector::term_matches(const Term& term, const DeviceInfo& info) {
  if (term.backend != "*" && term.backend != to_lower(info.backend())) return false;
  for (const DeviceTerm& device : term.devices) {
    switch (device.kind) {
      case DeviceTerm::Kind::any:
        return true;
      case DeviceTerm::Kind::index:
        if (device_index(info) == device.index) return true;
        break;
      case DeviceTerm::Kind::device_kind:
        if (info.kind == device.device_kind) return true;
        break;
      case DeviceTerm::Kind::uuid_prefix:
        if (without_dashes(to_lower(info.uuid)).starts_with(device.uuid_prefix)) return true;
        break;
    }
  }
  return false;
}

bool DeviceSelector::matches(const DeviceInfo& info) const {
  bool any_positive = false;
  bool selected = false;
  for (const Term& term : terms_) {
    if (term.discard) {
      if (term_matches(term, info)) return false;
    } else {
      any_positive = true;
      selected = selected || term_matches(term, info);
    }
  }
  return selected || !any_positive;
}

bool DeviceSelector::may_show_backend(std::string_view backend) const {
  const std::string name = to_lower(backend);
  bool any_positive = false;
  bool named = false;
  for (const Term& term : terms_) {
    const bool covers = term.backend == "*" || term.backend == name;
    if (!term.discard) {
      any_positive = true;
      named = named || covers;
    } else if (covers) {
      for (const DeviceTerm& device : term.devices)
        if (device.kind == DeviceTerm::Kind::any) return false;  // "!opencl:*" or "!*:*"
    }
  }
  return named || !any_positive;
}

void DeviceSelector::check_backends(const std::vector<std::string>& known) const {
  for (const Term& term : terms_) {
    if (term.backend == "*" || std::find(known.begin(), known.end(), term.backend) != known.end())
      continue;
    std::string list;
    for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
    throw Error(ErrorCode::InvalidArgument, "device selector '" + text_ + "': unknown backend '" +
                                                term.backend + "'; known backends: " + list +
                                                plugins_not_loaded(term.backend));
  }
}

}  // namespace hal
