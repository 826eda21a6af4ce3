// The error body: see error_body.hpp.
#include "http/error_body.hpp"

#include "common/json_text.hpp"

#include <set>

void error_body::write(const ApiError &error, const std::string &request_id, std::string &b)
{
    b.clear();
    b.append("{\"error\":");
    json_text::append_string(b, error.message);
    b.append(",\"code\":");
    json_text::append_string(b, error.code);
    b.append(",\"request_id\":");
    json_text::append_string(b, request_id);
    if (!error.errors.empty()) {
        // One member per name as a reader decodes it: names that differ only in invalid UTF-8
        // (each such byte is written \ufffd), or in such a byte and a real U+FFFD, would
        // otherwise repeat a member, which a strict parser refuses and a lenient one reads as
        // the last problem only. The first problem under a name is kept.
        b.append(",\"errors\":{");
        std::set<std::string> written;
        for (const auto &problem : error.errors) {
            if (!written.insert(json_text::as_read(problem.first)).second)
                continue;
            if (written.size() > 1)
                b.push_back(',');
            json_text::append_string(b, problem.first);
            b.push_back(':');
            json_text::append_string(b, problem.second);
        }
        b.push_back('}');
    }
    b.push_back('}');
}

std::string bearer_challenge(const std::string &description)
{
    std::string out = "Bearer error=\"invalid_token\", error_description=\"";
    for (const char c : description) {
        const auto u = static_cast<unsigned char>(c);
        out.push_back(u >= 0x20 && u <= 0x7E && c != '"' && c != '\\' ? c : '?');
    }
    out.push_back('"');
    return out;
}

void write_error(HttpResponse &response, const ApiError &error, const std::string &request_id)
{
    response.status = error.status;
    response.error_code = error.code;
    response.content_type = "application/json";
    error_body::write(error, request_id, response.body);
    if (!error.allow.empty())
        response.add_header("Allow", error.allow);
    // A challenge goes with a 401 only (/mcp answers a refused key or token 403: mcp_endpoint).
    if (error.status == 401 && (error.code == error_code::invalid_token.code ||
                                error.code == error_code::token_expired.code))
        response.add_header("WWW-Authenticate", bearer_challenge(error.message));
    else if (error.status == 401)
        response.add_header("WWW-Authenticate", "Bearer");
}
