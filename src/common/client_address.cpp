// Client addresses and CIDRs: see client_address.hpp.
#include "common/client_address.hpp"

#include "common/chars.hpp"

#include <arpa/inet.h>
#include <algorithm>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>

namespace client_address {

namespace {

// Parses an address; an IPv4-mapped IPv6 address becomes IPv4.
bool parse_address(std::string_view text, int &family, unsigned char *addr)
{
    // inet_pton reads a C string: a NUL would end the address early and hide what follows.
    if (text.find('\0') != std::string_view::npos)
        return false;
    std::string t(chars::trim_ows(text));
    if (t.size() > 2 && t.front() == '[' && t.back() == ']')
        t = t.substr(1, t.size() - 2);
    if (inet_pton(AF_INET, t.c_str(), addr) == 1) {
        family = AF_INET;
        return true;
    }
    unsigned char v6[16];
    if (inet_pton(AF_INET6, t.c_str(), v6) != 1)
        return false;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(v6, mapped, 12) == 0) {
        family = AF_INET;
        std::memcpy(addr, v6 + 12, 4);
    } else {
        family = AF_INET6;
        std::memcpy(addr, v6, 16);
    }
    return true;
}

} // namespace

bool parse_cidr(std::string_view text, Cidr &out)
{
    text = chars::trim_ows(text);
    size_t slash = text.find('/');
    std::string_view address = text.substr(0, slash);
    if (!parse_address(address, out.family, out.addr))
        return false;
    int max = out.family == AF_INET ? 32 : 128;
    if (slash == std::string_view::npos) {
        out.prefix = max;
        return true;
    }
    std::string_view bits = text.substr(slash + 1);
    if (bits.empty() || bits.size() > 3)
        return false;
    int prefix = 0;
    for (char c : bits) {
        if (c < '0' || c > '9')
            return false;
        prefix = prefix * 10 + (c - '0');
    }
    if (prefix > max)
        return false;
    out.prefix = prefix;
    return true;
}

std::vector<Cidr> parse_list(std::string_view text, std::string &bad)
{
    std::vector<Cidr> out;
    bad.clear();
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string_view item = chars::trim_ows(text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (!item.empty()) {
            Cidr c;
            if (parse_cidr(item, c))
                out.push_back(c);
            else
                bad += (bad.empty() ? "" : ", ") + std::string(item);
        }
        if (comma == std::string_view::npos)
            break;
        start = comma + 1;
    }
    return out;
}

bool contains(const Cidr &cidr, std::string_view address)
{
    int family = 0;
    unsigned char addr[16];
    if (!parse_address(address, family, addr) || family != cidr.family)
        return false;
    int full = cidr.prefix / 8, rest = cidr.prefix % 8;
    if (std::memcmp(addr, cidr.addr, full) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = static_cast<unsigned char>(0xff << (8 - rest));
    return (addr[full] & mask) == (cidr.addr[full] & mask);
}

bool contains_any(const std::vector<Cidr> &cidrs, std::string_view address)
{
    for (const Cidr &c : cidrs)
        if (contains(c, address))
            return true;
    return false;
}

std::string counted_as(std::string_view address, int ipv6_prefix)
{
    int family = 0;
    unsigned char addr[16];
    if (!parse_address(address, family, addr))
        return std::string();
    char text[INET6_ADDRSTRLEN] = {0};
    if (family == AF_INET) {
        (void)inet_ntop(AF_INET, addr, text, sizeof(text));
        return text;
    }
    const int prefix = std::clamp(ipv6_prefix, 0, 128);
    const int full = prefix / 8, rest = prefix % 8;
    if (full < 16) {
        addr[full] &= static_cast<unsigned char>(rest == 0 ? 0 : 0xff << (8 - rest));
        std::memset(addr + full + 1, 0, static_cast<std::size_t>(15 - full));
    }
    (void)inet_ntop(AF_INET6, addr, text, sizeof(text));
    return std::string(text) + "/" + std::to_string(prefix);
}

std::string resolve(std::string_view peer, const std::string *forwarded_for,
                    const std::vector<Cidr> &trusted)
{
    int family;
    unsigned char addr[16];
    if (!parse_address(peer, family, addr))
        return std::string();
    std::string current(chars::trim_ows(peer));
    if (!contains_any(trusted, current) || forwarded_for == nullptr)
        return current;
    // Walk X-Forwarded-For from the right: each hop was appended by the proxy after it.
    std::string_view list(*forwarded_for);
    while (!list.empty()) {
        size_t comma = list.rfind(',');
        std::string_view hop =
            chars::trim_ows(comma == std::string_view::npos ? list : list.substr(comma + 1));
        if (!parse_address(hop, family, addr))
            return std::string(); // a malformed hop: the client is unknown, which fails closed
        current = std::string(hop);
        if (!contains_any(trusted, current))
            return current;
        list = comma == std::string_view::npos ? std::string_view() : list.substr(0, comma);
    }
    return current;
}

} // namespace client_address
