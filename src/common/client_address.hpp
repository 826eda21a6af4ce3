// Who is calling, by address: CIDR matching for key allow-lists, and the client behind trusted
// proxies (X-Forwarded-For is believed only when the connection comes from a trusted proxy).
// Pure C++: no PostgreSQL header.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace client_address {

struct Cidr {
    int family = 0; // AF_INET or AF_INET6
    unsigned char addr[16] = {0};
    int prefix = 0;
};

// Parses "10.0.0.0/8", "2001:db8::/32" or a bare address (a /32 or /128).
bool parse_cidr(std::string_view text, Cidr &out);
// Parses a comma-separated list; entries that do not parse are returned in bad.
std::vector<Cidr> parse_list(std::string_view text, std::string &bad);

// True when address (text; an IPv4-mapped IPv6 address counts as IPv4) is inside cidr.
bool contains(const Cidr &cidr, std::string_view address);
bool contains_any(const std::vector<Cidr> &cidrs, std::string_view address);

// Who an address is when callers are counted by address (querygate.anonymous_rate_limit): an
// IPv4 address itself; an IPv6 address its network of `ipv6_prefix` bits ("2001:db8:1:2::/64"),
// since one host is given a whole /64 and can call from any address in it. An IPv4-mapped address
// is IPv4. Empty when it does not parse.
std::string counted_as(std::string_view address, int ipv6_prefix);

// The caller's address: the peer's, unless the peer is a trusted proxy, in which case the
// right-most X-Forwarded-For entry that is not itself a trusted proxy. Empty when unknown.
std::string resolve(std::string_view peer, const std::string *forwarded_for,
                    const std::vector<Cidr> &trusted);

} // namespace client_address
