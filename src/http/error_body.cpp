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
