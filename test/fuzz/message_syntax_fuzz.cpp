// Fuzzes the request-head checks (src/http/message_syntax): target(), request(), origin_path() and
// HeadLayout, which reads libmicrohttpd's read buffer between the pointers it was given. The input
// is a request head up to its empty line; it is laid out as libmicrohttpd 0.9.75 leaves it (line
// ends, the request line's two spaces and each colon zeroed, every string ending at its first
// NUL; as test/unit/message_syntax_test.cpp simulates it), in a heap block of exactly its size, so
// that a read before or after it is AddressSanitizer's finding. Heads libmicrohttpd refuses
// itself (no colon, no version, a continuation line) are skipped.
// Oracles: no read outside the block; a head without any NUL and with one space after the method
// passes HeadLayout (what a well-formed request leaves is never refused for its layout); a head
// that passes all three checks has a token method, a Host in HTTP/1.1, and no CR in any value;
// origin_path of an absolute-form target starts with '/'.
#include "http/message_syntax.hpp"

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Field {
    std::size_t name, name_size, value, value_size; // offsets into the block
};

struct Laid {
    std::size_t method = 0, target = 0, target_size = 0, version = 0, end = 0;
    bool target_query = false;
    std::string target_text; // as the URI log callback saw it
    std::vector<Field> fields;
    std::string version_text;
};

// Lays `raw` out in `b` (its copy) as libmicrohttpd does; false for a head it refuses itself.
bool lay_out(char *b, std::size_t n, Laid &out)
{
    std::vector<std::pair<std::size_t, std::size_t>> lines; // start, length
    std::size_t pos = 0;
    bool empty_line = false;
    while (pos < n) {
        std::size_t e = pos;
        while (e < n && b[e] != '\n' && !(b[e] == '\r' && e + 1 < n && b[e + 1] == '\n'))
            e++;
        if (e >= n)
            return false; // a line without its end: libmicrohttpd waits for more
        const std::size_t len = e - pos;
        if (b[e] == '\r') {
            b[e] = b[e + 1] = '\0';
            e += 2;
        } else {
            b[e] = '\0';
            e++;
        }
        if (len == 0 && lines.empty()) { // empty lines before the request line are skipped
            pos = e;
            out.method = pos;
            continue;
        }
        lines.emplace_back(pos, len);
        pos = e;
        if (len == 0) {
            empty_line = true;
            break;
        }
    }
    if (!empty_line || lines.size() < 2)
        return false;
    out.end = pos;
    // The request line: the method up to the first space (not empty), spaces skipped, the
    // version after the last space: exactly HTTP/1.x.
    char *line = b + lines[0].first;
    const std::size_t len = lines[0].second;
    char *space = static_cast<char *>(std::memchr(line, ' ', len));
    if (space == nullptr || space == line)
        return false;
    *space = '\0';
    char *t = space + 1;
    while (t < line + len && *t == ' ')
        t++;
    if (t >= line + len)
        return false;
    char *last = line + len - 1;
    while (last > t && *last == ' ')
        last--;
    while (last > t && *last != ' ')
        last--;
    if (last <= t)
        return false;
    *last = '\0';
    char *version = last + 1;
    const std::size_t version_size = static_cast<std::size_t>(line + len - version);
    if (version_size != 8 || std::memcmp(version, "HTTP/1.", 7) != 0 || version[7] < '0' ||
        version[7] > '9')
        return false;
    out.method = static_cast<std::size_t>(line - b);
    out.target = static_cast<std::size_t>(t - b);
    out.target_size = std::strlen(t);
    out.target_text.assign(t, out.target_size);
    // libmicrohttpd then ends the path at '?'.
    if (char *q = static_cast<char *>(std::memchr(t, '?', out.target_size))) {
        out.target_query = true;
        *q = '\0';
    }
    out.version = static_cast<std::size_t>(version - b);
    out.version_text.assign(version, 8);
    for (std::size_t i = 1; i + 1 < lines.size(); i++) {
        char *name = b + lines[i].first;
        if (*name == ' ' || *name == '\t')
            return false; // a continuation or a whitespace-led line: libmicrohttpd's to judge
        char *colon = std::strchr(name, ':');
        if (colon == nullptr)
            return false;
        *colon = '\0';
        char *value = colon + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        out.fields.push_back(Field{static_cast<std::size_t>(name - b), std::strlen(name),
                                   static_cast<std::size_t>(value - b), std::strlen(value)});
    }
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 16384)
        return 0;
    // The block holds exactly the head: a read outside it is a finding.
    std::unique_ptr<char[]> block(new char[size]);
    std::memcpy(block.get(), data, size);
    char *b = block.get();
    Laid laid;
    if (!lay_out(b, size, laid))
        return 0;
    const std::string_view raw(reinterpret_cast<const char *>(data), size);

    message_syntax::HeadLayout layout(b + laid.method, b + laid.target, laid.target_size,
                                      laid.target_query, b + laid.version, b + laid.end);
    HttpRequest request;
    request.method = b + laid.method;
    request.path.assign(b + laid.target);
    for (const Field &f : laid.fields) {
        layout.field(b + f.name, f.name_size, b + f.value, f.value_size);
        std::string name(b + f.name, f.name_size);
        for (char &c : name)
            if (c >= 'A' && c <= 'Z')
                c = static_cast<char>(c - 'A' + 'a');
        request.headers.emplace_back(std::move(name), std::string(b + f.value, f.value_size));
    }
    const message_syntax::Problem *laid_out = layout.finish();

    // A head without a NUL, with one space after the method, is laid out as a well-formed one.
    const std::size_t method_size = std::strlen(b + laid.method);
    const bool clean =
        raw.find('\0') == std::string_view::npos && raw[laid.method + method_size + 1] != ' ';
    FUZZ_CHECK(!clean || laid_out == nullptr);

    message_syntax::TargetForm form;
    const message_syntax::Problem *target = message_syntax::target(laid.target_text, form);
    const message_syntax::Problem *parsed =
        message_syntax::request(request, form, laid.version_text);
    if (laid_out == nullptr && target == nullptr && parsed == nullptr) {
        FUZZ_CHECK(!request.method.empty());
        bool host = false;
        for (const auto &h : request.headers) {
            FUZZ_CHECK(h.second.find('\r') == std::string::npos);
            host = host || h.first == "host";
        }
        FUZZ_CHECK(host || laid.version_text == "HTTP/1.0");
    }
    if (form == message_syntax::TargetForm::absolute) {
        const std::string_view path = message_syntax::origin_path(request.path);
        FUZZ_CHECK(!path.empty() && path[0] == '/');
    }
    return 0;
}
