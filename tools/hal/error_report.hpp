// How the hal command reports the error that ends it. Scripts read stdout, so under --json the
// error is a JSON object there ({"schema": "hal.error/1", "code", "message"}); otherwise it is
// a line on stderr, "hal: error: <message> [<code>]", and stdout stays empty.
#pragma once

#include <string>
#include <string_view>

namespace hal::tool {

// Whether the command line asks for JSON: "--json" before any lone "--".
bool wants_json(int argc, char** argv);

// `code`: an ErrorCode's name, or "UsageError" for a command line that does not parse.
void report_error(bool json, std::string_view code, const std::string& message);

}  // namespace hal::tool
