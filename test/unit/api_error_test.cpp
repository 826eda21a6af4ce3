// error_code::all must hold every code src/common/api_error.hpp defines, each once: what checks
// answers against the contract (the request-handler fuzz target) reads the list, and a code left
// out of it would be taken for an undefined one.
#include "common/api_error.hpp"

#include "tap.hpp"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

int main()
{
    std::ifstream in("src/common/api_error.hpp");
    std::stringstream text;
    text << in.rdbuf();
    const std::string header = text.str();
    tap::ok(!header.empty(), "src/common/api_error.hpp is read");

    // Every definition: inline constexpr ErrorCode name{status, "code"};
    std::set<std::string> defined;
    const std::regex definition(R"re(inline constexpr ErrorCode (\w+)\{(\d+), "(\w+)"\})re");
    for (std::sregex_iterator m(header.begin(), header.end(), definition), end; m != end; ++m) {
        const std::string name = (*m)[1], code = (*m)[3];
        tap::ok(name == code, "error_code::" + name + " is answered as \"" + code + "\"");
        defined.insert(code);
    }
    tap::ok(defined.size() >= 20, "the definitions are found", std::to_string(defined.size()));

    std::set<std::string> listed;
    for (const ErrorCode &c : error_code::all) {
        const std::string code = c.code;
        tap::ok(listed.insert(code).second, code + " is listed once in error_code::all");
        tap::ok(c.status >= 400 && c.status <= 599, code + " has an error status",
                std::to_string(c.status));
    }
    for (const std::string &code : defined)
        tap::ok(listed.count(code) == 1, code + " is listed in error_code::all");
    tap::ok(listed.size() == defined.size(), "error_code::all lists only defined codes",
            std::to_string(listed.size()) + " listed, " + std::to_string(defined.size()) +
                " defined");
    return tap::done();
}
