// Fuzzes client addresses and CIDRs (src/common/client_address): parse_cidr, parse_list, contains
// and resolve, the caller's address behind trusted proxies. The input, with FuzzedDataProvider:
// from the end, whether X-Forwarded-For is present; from the start, FuzzedDataProvider strings (a
// backslash and another byte end one): a CIDR, a list of CIDRs (trusted_proxies), an address,
// the peer's address; the rest is X-Forwarded-For.
// Oracles: a parsed CIDR has a family and a prefix within it and contains its own address (a /0,
// every address of its family); contains agrees with a bit-by-bit reference built on inet_pton;
// parse_list keeps or reports every non-empty entry; resolve answers the peer when it is not a
// trusted proxy, an X-Forwarded-For hop otherwise, never a trusted proxy unless every hop is one,
// and nothing when the peer or a hop it reaches is not an address.
#include "common/client_address.hpp"

#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <arpa/inet.h>
#include <cstdint>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>

namespace {

using client_address::Cidr;

std::string trimmed(std::string_view s)
{
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// The reference reading of an address: brackets allowed, an IPv4-mapped IPv6 address is IPv4.
bool reference_address(std::string_view text, int &family, unsigned char *addr)
{
    std::string t = trimmed(text);
    if (t.find('\0') != std::string::npos) // the text is an address only as a whole
        return false;
    if (t.size() > 2 && t.front() == '[' && t.back() == ']')
        t = t.substr(1, t.size() - 2);
    unsigned char v6[16];
    if (inet_pton(AF_INET, t.c_str(), addr) == 1) {
        family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, t.c_str(), v6) != 1)
        return false;
    bool mapped = true;
    for (int i = 0; i < 12; i++)
        mapped = mapped && v6[i] == (i < 10 ? 0 : 0xff);
    family = mapped ? AF_INET : AF_INET6;
    std::memcpy(addr, mapped ? v6 + 12 : v6, mapped ? 4 : 16);
    return true;
}

bool reference_contains(const Cidr &cidr, std::string_view address)
{
    int family = 0;
    unsigned char addr[16];
    if (!reference_address(address, family, addr) || family != cidr.family)
        return false;
    for (int bit = 0; bit < cidr.prefix; bit++) {
        int mask = 0x80 >> (bit % 8);
        if ((addr[bit / 8] & mask) != (cidr.addr[bit / 8] & mask))
            return false;
    }
    return true;
}

bool reference_contains_any(const std::vector<Cidr> &cidrs, std::string_view address)
{
    for (const Cidr &c : cidrs)
        if (reference_contains(c, address))
            return true;
    return false;
}

void check_cidr(const Cidr &c, std::string_view address)
{
    FUZZ_CHECK(c.family == AF_INET || c.family == AF_INET6);
    FUZZ_CHECK(c.prefix >= 0 && c.prefix <= (c.family == AF_INET ? 32 : 128));
    char text[INET6_ADDRSTRLEN];
    FUZZ_CHECK(inet_ntop(c.family, c.addr, text, sizeof(text)) != nullptr);
    FUZZ_CHECK(client_address::contains(c, text));
    FUZZ_CHECK(client_address::contains(c, address) == reference_contains(c, address));
    if (c.prefix == 0) {
        int family = 0;
        unsigned char addr[16];
        if (reference_address(address, family, addr) && family == c.family)
            FUZZ_CHECK(client_address::contains(c, address));
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzedDataProvider in(data, size);
    bool forwarded = in.ConsumeBool();
    std::string cidr_text = in.ConsumeRandomLengthString(64);
    std::string list_text = in.ConsumeRandomLengthString(512);
    std::string address = in.ConsumeRandomLengthString(64);
    std::string peer = in.ConsumeRandomLengthString(64);
    std::string forwarded_for = in.ConsumeRemainingBytesAsString();

    Cidr cidr;
    if (client_address::parse_cidr(cidr_text, cidr))
        check_cidr(cidr, address);

    std::string bad;
    std::vector<Cidr> trusted = client_address::parse_list(list_text, bad);
    size_t entries = 0, refused = 0;
    for (size_t start = 0; start <= list_text.size();) {
        size_t comma = list_text.find(',', start);
        std::string item = trimmed(std::string_view(list_text).substr(
            start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!item.empty()) {
            entries++;
            Cidr c;
            refused += !client_address::parse_cidr(item, c);
        }
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    FUZZ_CHECK(trusted.size() + refused == entries);
    FUZZ_CHECK(bad.empty() == (refused == 0));
    for (const Cidr &c : trusted)
        check_cidr(c, address);
    FUZZ_CHECK(client_address::contains_any(trusted, address) ==
               reference_contains_any(trusted, address));

    std::string client =
        client_address::resolve(peer, forwarded ? &forwarded_for : nullptr, trusted);
    int family;
    unsigned char addr[16];
    if (!reference_address(peer, family, addr)) {
        FUZZ_CHECK(client.empty());
        return 0;
    }
    std::string current = trimmed(peer);
    if (!reference_contains_any(trusted, current) || !forwarded) {
        FUZZ_CHECK(client == current);
        return 0;
    }
    // Behind a trusted proxy: walk the hops from the right as the reference.
    std::string_view list(forwarded_for);
    std::string expected = current;
    while (!list.empty()) {
        size_t comma = list.rfind(',');
        std::string hop = trimmed(comma == std::string_view::npos ? list : list.substr(comma + 1));
        if (!reference_address(hop, family, addr)) {
            expected.clear();
            break;
        }
        expected = hop;
        if (!reference_contains_any(trusted, hop))
            break;
        list = comma == std::string_view::npos ? std::string_view() : list.substr(0, comma);
    }
    FUZZ_CHECK(client == expected);
    return 0;
}
