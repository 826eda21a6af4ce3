// A call as bytes, for the trip between an HTTP worker and a helper
// (src/worker/call_helpers.hpp): the CallRequest one way, the CallResult back. Plain C++.
//
// Both ends are the same build of the same library, so the format is private: each field in
// declaration order, a string as a 32-bit length and its bytes, a number as 64 bits, a flag as one
// byte, in the machine's own byte order. Decoding still checks every length against what is left:
// a short or damaged message is refused, never read past its end.
#pragma once

#include "common/call.hpp"

#include <cstddef>
#include <string>

namespace call_codec {

void encode(const CallRequest &request, std::string &out);
void encode(const CallResult &result, std::string &out);
// False when the bytes are not one whole message of that kind (out is then unspecified).
bool decode(const char *data, std::size_t size, CallRequest &out);
bool decode(const char *data, std::size_t size, CallResult &out);

} // namespace call_codec
