#pragma once
// Bearer tokens for medseg_serve (docs/serve.md "Security").
#include <string>

namespace medseg::serve {

// The token of --token_file: its first line without surrounding white space. Throws FileError naming the
// file when it is missing, empty, longer than 4 KiB, or readable by group or others (chmod 600 it).
std::string read_token_file(const std::string& path);

// Whether an Authorization header value is "Bearer <token>". Takes the same time wherever the two differ
// (and for any length of the header), so a client cannot find the token byte by byte from timings.
bool bearer_matches(const std::string& header, const std::string& token);

}  // namespace medseg::serve
