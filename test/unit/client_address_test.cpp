// Tests of src/common/client_address.cpp: CIDR parsing and matching (IPv4, IPv6, IPv4-mapped IPv6
// counted as IPv4), lists with bad entries, and the caller's address behind trusted proxies
// (X-Forwarded-For believed only from a trusted peer, walked from the right, failing closed).
#include "common/client_address.hpp"
#include "tap.hpp"

#include <sys/socket.h>

#include <string>
#include <vector>

namespace {

using client_address::Cidr;
using tap::is;
using tap::ok;

Cidr cidr(const std::string &text)
{
    Cidr c;
    if (!client_address::parse_cidr(text, c))
        tap::diag("test setup: " + text + " does not parse");
    return c;
}

bool parses(const std::string &text)
{
    Cidr c;
    return client_address::parse_cidr(text, c);
}

bool in(const std::string &range, const std::string &address)
{
    return client_address::contains(cidr(range), address);
}

void parse_cidr()
{
    {
        Cidr c;
        ok(client_address::parse_cidr("10.0.0.0/8", c) && c.family == AF_INET && c.prefix == 8 &&
               c.addr[0] == 10 && c.addr[1] == 0,
           "parse_cidr: 10.0.0.0/8");
    }
    {
        Cidr c;
        ok(client_address::parse_cidr("192.168.1.7", c) && c.family == AF_INET && c.prefix == 32 &&
               c.addr[0] == 192 && c.addr[3] == 7,
           "parse_cidr: a bare IPv4 address is a /32");
    }
    {
        Cidr c;
        ok(client_address::parse_cidr("2001:db8::/32", c) && c.family == AF_INET6 &&
               c.prefix == 32 && c.addr[0] == 0x20 && c.addr[1] == 0x01 && c.addr[2] == 0x0d &&
               c.addr[3] == 0xb8,
           "parse_cidr: 2001:db8::/32");
    }
    {
        Cidr c;
        ok(client_address::parse_cidr("::1", c) && c.family == AF_INET6 && c.prefix == 128 &&
               c.addr[15] == 1,
           "parse_cidr: a bare IPv6 address is a /128");
    }
    {
        Cidr c;
        ok(client_address::parse_cidr("::ffff:192.0.2.1", c) && c.family == AF_INET &&
               c.prefix == 32 && c.addr[0] == 192 && c.addr[3] == 1,
           "parse_cidr: a bare IPv4-mapped address is IPv4, a /32");
    }
    {
        Cidr c;
        ok(client_address::parse_cidr("[2001:db8::1]", c) && c.family == AF_INET6 &&
               c.prefix == 128,
           "parse_cidr: a bracketed IPv6 address");
    }
    {
        Cidr c;
        ok(client_address::parse_cidr("  10.1.2.3/16\t", c) && c.family == AF_INET &&
               c.prefix == 16,
           "parse_cidr: spaces and tabs around");
    }
    ok(parses("0.0.0.0/0"), "parse_cidr: 0.0.0.0/0");
    ok(parses("::/0"), "parse_cidr: ::/0");
    ok(parses("10.0.0.0/32"), "parse_cidr: /32");
    ok(parses("2001:db8::/128"), "parse_cidr: /128");
    ok(parses("10.0.0.0/08"), "parse_cidr: a prefix with a leading zero");
    ok(parses("2001:DB8::AbCd/64"), "parse_cidr: upper-case hex");
    ok(parses("1:2:3:4:5:6:7:8"), "parse_cidr: eight IPv6 groups");
    ok(parses("::"), "parse_cidr: the unspecified IPv6 address");
    ok(parses("::127.0.0.1"), "parse_cidr: an IPv4-compatible IPv6 address");
    ok(parses("fe80::1/10"), "parse_cidr: link-local");
    {
        Cidr c;
        ok(client_address::parse_cidr("10.0.0.1/33", c) == false, "parse_cidr: IPv4 /33");
    }
    ok(!parses("2001:db8::/129"), "parse_cidr: IPv6 /129");
    ok(!parses("10.0.0.0/"), "parse_cidr: an empty prefix");
    ok(!parses("/8"), "parse_cidr: no address");
    ok(!parses(""), "parse_cidr: empty");
    ok(!parses("   "), "parse_cidr: blank");
    ok(!parses("10.0.0.0/-1"), "parse_cidr: a negative prefix");
    ok(!parses("10.0.0.0/+8"), "parse_cidr: a prefix with a plus sign");
    ok(!parses("10.0.0.0/8a"), "parse_cidr: a prefix with a letter");
    ok(!parses("10.0.0.0/0008"), "parse_cidr: a prefix of four digits");
    ok(!parses("10.0.0.0/99999999999"), "parse_cidr: a huge prefix");
    ok(!parses("10.0.0.0/ 8"), "parse_cidr: a space after the slash");
    ok(!parses("10.0.0.0/8/8"), "parse_cidr: two slashes");
    ok(!parses(std::string("10.0.0.0/8\0", 11)), "parse_cidr: a NUL after the prefix");
    ok(!parses(std::string("10.0.0.0/\08", 11)), "parse_cidr: a NUL before the prefix");
    ok(!parses("10.0.0.0/255.0.0.0"), "parse_cidr: a netmask for a prefix");
    ok(!parses("256.0.0.1"), "parse_cidr: an octet of 256");
    ok(!parses("1.2.3"), "parse_cidr: three octets");
    ok(!parses("1.2.3.4.5"), "parse_cidr: five octets");
    ok(!parses("127.1"), "parse_cidr: the short form 127.1");
    ok(!parses("0x7f.0.0.1"), "parse_cidr: a hexadecimal octet");
    ok(!parses("010.0.0.1"), "parse_cidr: an octal-looking octet");
    ok(!parses("2130706433"), "parse_cidr: an address as one number");
    ok(!parses("1.2.3.4 "
               "5"),
       "parse_cidr: two addresses");
    ok(!parses("localhost"), "parse_cidr: a host name");
    ok(!parses(":::"), "parse_cidr: three colons");
    ok(!parses("2001:db8::1::2"), "parse_cidr: two double colons");
    ok(!parses("1:2:3:4:5:6:7:8:9"), "parse_cidr: nine IPv6 groups");
    ok(!parses("12345::"), "parse_cidr: an IPv6 group of five digits");
    ok(!parses("fe80::1%eth0"), "parse_cidr: a zone index");
    ok(!parses("[::1"), "parse_cidr: an unclosed bracket");
    ok(!parses("[]"), "parse_cidr: empty brackets");
    ok(!parses("[10.0.0.0/8]"), "parse_cidr: the prefix inside brackets");
    ok(!parses("10.0.0.1:8080"), "parse_cidr: an address with a port");
    ok(!parses("\xC3\xA9.0.0.1"), "parse_cidr: non-ASCII bytes");
    ok(!parses(std::string(100000, '1')), "parse_cidr: 100000 digits");
}

void contains()
{
    ok(in("10.0.0.0/8", "10.255.3.4"), "contains: inside /8");
    ok(!in("10.0.0.0/8", "11.0.0.0"), "contains: just past /8");
    ok(!in("10.0.0.0/8", "9.255.255.255"), "contains: just before /8");
    ok(in("192.168.1.0/24", "192.168.1.255"), "contains: the last address of a /24");
    ok(!in("192.168.1.0/24", "192.168.2.0"), "contains: the next /24");
    ok(in("172.16.0.0/12", "172.31.255.255"), "contains: a prefix that ends mid-byte, inside");
    ok(!in("172.16.0.0/12", "172.32.0.0"), "contains: a prefix that ends mid-byte, outside");
    ok(in("10.0.0.4/30", "10.0.0.7"), "contains: /30, inside");
    ok(!in("10.0.0.4/30", "10.0.0.8"), "contains: /30, outside");
    ok(in("10.0.0.1/31", "10.0.0.0"), "contains: host bits in the CIDR are ignored");
    ok(in("10.0.0.1", "10.0.0.1"), "contains: /32, the address itself");
    ok(!in("10.0.0.1", "10.0.0.2"), "contains: /32, the next address");
    ok(in("0.0.0.0/0", "203.0.113.9"), "contains: /0 holds every IPv4 address");
    ok(!in("0.0.0.0/0", "2001:db8::1"), "contains: IPv4 /0 holds no IPv6 address");
    ok(in("::/0", "2001:db8::1"), "contains: ::/0 holds every IPv6 address");
    ok(!in("::/0", "10.0.0.1"), "contains: ::/0 holds no IPv4 address");
    ok(in("2001:db8::/32", "2001:db8:ffff::1"), "contains: IPv6 /32, inside");
    ok(!in("2001:db8::/32", "2001:db9::1"), "contains: IPv6 /32, outside");
    ok(in("2001:db8::/33", "2001:db8:7fff::1"), "contains: IPv6 /33, inside");
    ok(!in("2001:db8::/33", "2001:db8:8000::1"), "contains: IPv6 /33, outside");
    ok(in("::1", "0:0:0:0:0:0:0:1"), "contains: another spelling of ::1");
    ok(in("2001:db8::abcd", "2001:DB8::ABCD"), "contains: upper-case hex");
    ok(!in("::1", "::2"), "contains: /128, another address");

    ok(in("10.0.0.0/8", "::ffff:10.1.2.3"), "contains: an IPv4-mapped address counts as IPv4");
    ok(in("10.0.0.0/8", "::FFFF:10.1.2.3"), "contains: IPv4-mapped, upper case");
    ok(in("10.0.0.0/8", "::ffff:a01:203"), "contains: IPv4-mapped written in hex");
    ok(!in("::/0", "::ffff:10.1.2.3"), "contains: an IPv4-mapped address is not in ::/0");
    ok(in("::ffff:10.0.0.1", "10.0.0.1"), "contains: a mapped CIDR holds the IPv4 address");
    ok(!in("10.0.0.0/8", "::10.1.2.3"), "contains: IPv4-compatible (not mapped) is IPv6");
    ok(!in("10.0.0.0/8", "64:ff9b::a01:203"), "contains: NAT64 is IPv6");

    ok(in("10.0.0.0/8", " 10.0.0.1\t"), "contains: spaces and tabs around the address");
    ok(in("::1", "[::1]"), "contains: a bracketed address");
    ok(!in("10.0.0.0/8", ""), "contains: an empty address");
    ok(!in("10.0.0.0/8", "10.0.0.1:8080"), "contains: an address with a port");
    ok(!in("::1", "[::1]:80"), "contains: a bracketed address with a port");
    ok(!in("10.0.0.0/8", "10.0.0.1/32"), "contains: a CIDR is not an address");
    ok(!in("10.0.0.0/8", "10.1"), "contains: a short form");
    ok(!in("10.0.0.0/8", "010.0.0.1"), "contains: a leading zero");
    ok(!in("10.0.0.0/8", "10.0.0.1, 10.0.0.2"), "contains: a list is not an address");
    ok(!in("fe80::/10", "fe80::1%eth0"), "contains: an address with a zone index");
    ok(!in("0.0.0.0/0", "unknown"), "contains: a word");
    ok(!client_address::contains(Cidr(), "10.0.0.1"), "contains: an unparsed CIDR holds nothing");
    ok(!client_address::contains(Cidr(), ""), "contains: an unparsed CIDR, an empty address");
}

void lists()
{
    std::string bad = "left over";
    std::vector<Cidr> v =
        client_address::parse_list("10.0.0.0/8, 192.168.0.0/16,2001:db8::/32", bad);
    ok(v.size() == 3 && bad.empty(), "parse_list: three entries", "bad: " + bad);
    ok(v.size() == 3 && v[0].prefix == 8 && v[1].prefix == 16 && v[2].family == AF_INET6,
       "parse_list: entries in order");

    v = client_address::parse_list("", bad);
    ok(v.empty() && bad.empty(), "parse_list: empty text, no entry");
    v = client_address::parse_list(" , ,\t,", bad);
    ok(v.empty() && bad.empty(), "parse_list: only commas and blanks");
    v = client_address::parse_list("10.0.0.0/8,,,::1,", bad);
    ok(v.size() == 2 && bad.empty(), "parse_list: empty entries skipped");
    v = client_address::parse_list("bad, 10.0.0.0/8, 10.0.0.0/33 ,\tworse", bad);
    is(v.size(), 1u, "parse_list: the one good entry among bad ones");
    is(bad, "bad, 10.0.0.0/33, worse", "parse_list: bad entries named, trimmed, in order");
    v = client_address::parse_list("10.0.0.0/8", bad);
    is(bad, "", "parse_list: bad is cleared first");
    v = client_address::parse_list("10.0.0.0/8;192.168.0.0/16", bad);
    ok(v.empty() && bad == "10.0.0.0/8;192.168.0.0/16", "parse_list: a semicolon is no separator");

    std::string many;
    for (int i = 0; i < 10000; i++)
        many += "10." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) + ".0/24,";
    v = client_address::parse_list(many, bad);
    ok(v.size() == 10000 && bad.empty(), "parse_list: 10000 entries");

    std::vector<Cidr> list = client_address::parse_list("10.0.0.0/8, 2001:db8::/32", bad);
    ok(client_address::contains_any(list, "10.9.9.9"), "contains_any: the first entry");
    ok(client_address::contains_any(list, "2001:db8::9"), "contains_any: the second entry");
    ok(client_address::contains_any(list, "::ffff:10.9.9.9"), "contains_any: IPv4-mapped");
    ok(!client_address::contains_any(list, "192.0.2.1"), "contains_any: neither");
    ok(!client_address::contains_any(list, "junk"), "contains_any: not an address");
    ok(!client_address::contains_any({}, "10.0.0.1"), "contains_any: an empty list holds nothing");
}

std::string resolve(const std::string &peer, const char *forwarded_for, const std::string &trusted)
{
    std::string bad;
    std::vector<Cidr> t = client_address::parse_list(trusted, bad);
    if (!bad.empty())
        tap::diag("test setup: bad trusted entries " + bad);
    if (forwarded_for == nullptr)
        return client_address::resolve(peer, nullptr, t);
    std::string header = forwarded_for;
    return client_address::resolve(peer, &header, t);
}

void resolving()
{
    const std::string proxies = "10.0.0.0/8, ::1";
    is(resolve("203.0.113.5", nullptr, ""), "203.0.113.5", "resolve: no proxies, the peer");
    is(resolve("203.0.113.5", "198.51.100.1", ""), "203.0.113.5",
       "resolve: X-Forwarded-For from an untrusted peer is ignored");
    is(resolve("203.0.113.5", "198.51.100.1", proxies), "203.0.113.5",
       "resolve: a peer outside the trusted proxies, the peer");
    is(resolve("10.0.0.2", nullptr, proxies), "10.0.0.2",
       "resolve: a trusted peer without the header, the peer");
    is(resolve("10.0.0.2", "198.51.100.1", proxies), "198.51.100.1",
       "resolve: a trusted peer, the forwarded address");
    is(resolve("10.0.0.2", "198.51.100.1, 10.0.0.3", proxies), "198.51.100.1",
       "resolve: trusted hops on the right are skipped");
    is(resolve("10.0.0.2", "1.1.1.1, 198.51.100.1, 10.0.0.3", proxies), "198.51.100.1",
       "resolve: the right-most untrusted hop, not the left-most");
    is(resolve("10.0.0.2", "spoofed, 198.51.100.1", proxies), "198.51.100.1",
       "resolve: garbage left of the client is never read");
    is(resolve("10.0.0.2", "198.51.100.1, junk", proxies), "",
       "resolve: a malformed hop on the path fails closed");
    is(resolve("10.0.0.2", "198.51.100.1, 10.0.0.3:443", proxies), "",
       "resolve: a hop with a port fails closed");
    is(resolve("10.0.0.2", "198.51.100.1,", proxies), "",
       "resolve: an empty right-most hop fails closed");
    is(resolve("10.0.0.2", "198.51.100.1, , 10.0.0.3", proxies), "",
       "resolve: an empty hop between trusted ones fails closed");
    is(resolve("10.0.0.2", "unknown", proxies), "", "resolve: the word unknown fails closed");
    is(resolve("10.0.0.2", "10.0.0.4, 10.0.0.3", proxies), "10.0.0.4",
       "resolve: every hop trusted, the left-most hop");
    is(resolve("10.0.0.2", "", proxies), "10.0.0.2", "resolve: an empty header, the peer");
    is(resolve("10.0.0.2", " \t198.51.100.1 \t,\t10.0.0.3 ", proxies), "198.51.100.1",
       "resolve: spaces and tabs around hops");
    is(resolve("10.0.0.2", "198.51.100.1,10.0.0.3", proxies), "198.51.100.1",
       "resolve: hops without spaces");
    is(resolve("::1", "2001:db8::7", proxies), "2001:db8::7",
       "resolve: an IPv6 proxy and an IPv6 client");
    is(resolve("::ffff:10.0.0.2", "198.51.100.1", proxies), "198.51.100.1",
       "resolve: an IPv4-mapped peer inside an IPv4 trusted range");
    is(resolve("10.0.0.2", "198.51.100.1, ::ffff:10.0.0.3", proxies), "198.51.100.1",
       "resolve: an IPv4-mapped trusted hop is skipped");
    is(resolve("::1", "::1, ::1", proxies), "::1", "resolve: loops of the proxy itself");
    is(resolve(" 203.0.113.5 ", nullptr, ""), "203.0.113.5", "resolve: the peer, trimmed");
    is(resolve("", "198.51.100.1", "0.0.0.0/0"), "", "resolve: an empty peer is unknown");
    is(resolve("unix-socket", nullptr, ""), "", "resolve: a peer that is no address is unknown");
    is(resolve("fe80::1%eth0", nullptr, ""), "", "resolve: a peer with a zone index is unknown");

    std::string chain;
    for (int i = 0; i < 100000; i++)
        chain += "10.0." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) + ", ";
    is(resolve("10.0.0.2", ("198.51.100.1, " + chain + "10.0.0.3").c_str(), proxies),
       "198.51.100.1", "resolve: past 100000 trusted hops");
    is(resolve("10.0.0.2", ("junk, 198.51.100.1, " + chain + "10.0.0.3").c_str(), "0.0.0.0/0"), "",
       "resolve: everything trusted, the walk reaches the junk and fails closed");
}

// A NUL byte inside an address is not the end of it: inet_pton would stop there and take what
// came before.
void nul_bytes()
{
    using namespace std::string_literals;
    client_address::Cidr c;
    ok(!client_address::parse_cidr("10.0.0.0\0garbage/8"s, c),
       "a CIDR with a NUL in it is refused");
    ok(client_address::parse_cidr("10.0.0.0/8", c), "the same CIDR without it parses");
    ok(!client_address::contains(c, "10.0.0.1\0junk"s),
       "an address with a NUL in it is in no CIDR");
    const std::string xff = "198.51.100.1\0<script>"s;
    std::string bad;
    is(client_address::resolve("10.0.0.2", &xff, client_address::parse_list("10.0.0.0/8", bad)),
       std::string(), "a forwarded address with a NUL in it leaves the client unknown");
}

// Counted by address: IPv4 as itself, IPv6 by its network.
void counting()
{
    using client_address::counted_as;
    is(counted_as("203.0.113.7", 64), std::string("203.0.113.7"), "IPv4 is counted as itself");
    is(counted_as("::ffff:203.0.113.7", 64), std::string("203.0.113.7"),
       "an IPv4-mapped address as its IPv4 address");
    is(counted_as("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64), std::string("2001:db8:1:2::/64"),
       "IPv6 as its /64");
    is(counted_as("2001:db8:1:2::9", 64), counted_as("2001:db8:1:2:ffff::1", 64),
       "two addresses of one /64 are one caller");
    ok(counted_as("2001:db8:1:3::1", 64) != counted_as("2001:db8:1:2::1", 64),
       "the next /64 is another");
    is(counted_as("2001:db8:1:2:aaaa::1", 56), std::string("2001:db8:1::/56"), "a /56, when set");
    is(counted_as("2001:db8:1:2:aaaa::1", 60), std::string("2001:db8:1::/60"),
       "a prefix inside a byte");
    is(counted_as("2001:db8::1", 128), std::string("2001:db8::1/128"), "a /128 is the address");
    is(counted_as("[2001:db8:1:2::9]", 64), std::string("2001:db8:1:2::/64"), "in brackets too");
    is(counted_as("not an address", 64), std::string(), "what does not parse is nobody");
}

} // namespace

int main()
{
    counting();
    parse_cidr();
    contains();
    lists();
    resolving();
    nul_bytes();
    return tap::done();
}
