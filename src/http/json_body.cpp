// A strict JSON parser for request bodies: see json_body.hpp.
#include "http/json_body.hpp"

#include "common/json_text.hpp"

#include <algorithm>

namespace json_body {

namespace {

constexpr int max_depth = 64;

class Parser {
  public:
    Parser(std::string_view in, Duplicates duplicates) : in_(in), duplicates_(duplicates) {}

    bool document(Value &out)
    {
        skip_space();
        if (!value(out, 0))
            return false;
        skip_space();
        if (pos_ != in_.size())
            return fail("unexpected text after the JSON value");
        return true;
    }

    std::string error;

  private:
    // Duplicate names, found once the object is read: sorting costs n log n whatever the names are
    // (comparing each name with every earlier one cost n squared: a 1 MB body of distinct names
    // kept a worker busy for seconds, before any key was checked). Reported at the first name that
    // repeats an earlier one, as a reader going left to right would find it.
    bool unique_names(const Value &object, const std::vector<size_t> &name_at)
    {
        const auto &m = object.members;
        std::vector<size_t> order(m.size());
        for (size_t i = 0; i < order.size(); i++)
            order[i] = i;
        std::sort(order.begin(), order.end(), [&m](size_t a, size_t b) {
            const int c = m[a].first.compare(m[b].first);
            return c != 0 ? c < 0 : a < b;
        });
        size_t duplicate = m.size();
        for (size_t i = 1; i < order.size(); i++)
            if (m[order[i]].first == m[order[i - 1]].first)
                duplicate = std::min(duplicate, order[i]);
        if (duplicate == m.size())
            return true;
        pos_ = name_at[duplicate];
        return fail("duplicate member name");
    }

    bool fail(const char *why)
    {
        if (error.empty())
            error = std::string(why) + " at byte " + std::to_string(pos_);
        return false;
    }

    void skip_space()
    {
        while (pos_ < in_.size() &&
               (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r'))
            pos_++;
    }

    bool literal(const char *word)
    {
        std::string_view w(word);
        if (in_.substr(pos_, w.size()) != w)
            return fail("invalid literal");
        pos_ += w.size();
        return true;
    }

    bool value(Value &out, int depth)
    {
        if (depth > max_depth)
            return fail("nesting too deep");
        if (pos_ >= in_.size())
            return fail("unexpected end of input");
        size_t start = pos_;
        switch (in_[pos_]) {
        case '{':
            out.kind = Value::Kind::object;
            if (!object(out, depth))
                return false;
            out.text.assign(in_.substr(start, pos_ - start));
            return true;
        case '[':
            out.kind = Value::Kind::array;
            if (!array(depth))
                return false;
            out.text.assign(in_.substr(start, pos_ - start));
            return true;
        case '"':
            out.kind = Value::Kind::string;
            return string(out.text);
        case 't':
            out.kind = Value::Kind::boolean;
            out.text = "true";
            return literal("true");
        case 'f':
            out.kind = Value::Kind::boolean;
            out.text = "false";
            return literal("false");
        case 'n':
            out.kind = Value::Kind::null;
            return literal("null");
        default:
            out.kind = Value::Kind::number;
            return number(out.text);
        }
    }

    bool object(Value &out, int depth)
    {
        pos_++; // {
        skip_space();
        if (pos_ < in_.size() && in_[pos_] == '}') {
            pos_++;
            return true;
        }
        std::vector<size_t> name_at; // where each member's name starts
        for (;;) {
            skip_space();
            if (pos_ >= in_.size() || in_[pos_] != '"')
                return fail("expected a member name");
            std::string name;
            name_at.push_back(pos_);
            if (!string(name))
                return false;
            skip_space();
            if (pos_ >= in_.size() || in_[pos_] != ':')
                return fail("expected ':'");
            pos_++;
            skip_space();
            Value v;
            if (!value(v, depth + 1))
                return false;
            out.members.emplace_back(std::move(name), std::move(v));
            skip_space();
            if (pos_ < in_.size() && in_[pos_] == ',') {
                pos_++;
                continue;
            }
            if (pos_ < in_.size() && in_[pos_] == '}') {
                pos_++;
                return duplicates_ == Duplicates::keep || unique_names(out, name_at);
            }
            return fail("expected ',' or '}'");
        }
    }

    bool array(int depth)
    {
        pos_++; // [
        skip_space();
        if (pos_ < in_.size() && in_[pos_] == ']') {
            pos_++;
            return true;
        }
        for (;;) {
            skip_space();
            Value v; // only the raw text of the whole array is kept
            if (!value(v, depth + 1))
                return false;
            skip_space();
            if (pos_ < in_.size() && in_[pos_] == ',') {
                pos_++;
                continue;
            }
            if (pos_ < in_.size() && in_[pos_] == ']') {
                pos_++;
                return true;
            }
            return fail("expected ',' or ']'");
        }
    }

    bool digits()
    {
        size_t start = pos_;
        while (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9')
            pos_++;
        return pos_ > start;
    }

    bool number(std::string &out)
    {
        size_t start = pos_;
        if (in_[pos_] == '-')
            pos_++;
        if (pos_ < in_.size() && in_[pos_] == '0')
            pos_++;
        else if (!digits())
            return fail("invalid value");
        if (pos_ < in_.size() && in_[pos_] == '.') {
            pos_++;
            if (!digits())
                return fail("invalid number");
        }
        if (pos_ < in_.size() && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
            pos_++;
            if (pos_ < in_.size() && (in_[pos_] == '+' || in_[pos_] == '-'))
                pos_++;
            if (!digits())
                return fail("invalid number");
        }
        out.assign(in_.substr(start, pos_ - start));
        return true;
    }

    bool hex4(unsigned &out)
    {
        if (pos_ + 4 > in_.size())
            return fail("truncated \\u escape");
        out = 0;
        for (int i = 0; i < 4; i++) {
            char c = in_[pos_++];
            out <<= 4;
            if (c >= '0' && c <= '9')
                out |= c - '0';
            else if (c >= 'a' && c <= 'f')
                out |= c - 'a' + 10;
            else if (c >= 'A' && c <= 'F')
                out |= c - 'A' + 10;
            else
                return fail("invalid \\u escape");
        }
        return true;
    }

    static void append_utf8(std::string &out, unsigned cp)
    {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }

    bool string(std::string &out)
    {
        pos_++; // opening quote
        out.clear();
        size_t run = pos_; // start of bytes copied as they are
        for (;;) {
            if (pos_ >= in_.size())
                return fail("unterminated string");
            unsigned char c = static_cast<unsigned char>(in_[pos_]);
            if (c == '"') {
                out.append(in_.substr(run, pos_ - run));
                pos_++;
                if (!json_text::valid_utf8(out))
                    return fail("invalid UTF-8 in a string");
                return true;
            }
            if (c < 0x20)
                return fail("control character in a string");
            if (c != '\\') {
                pos_++;
                continue;
            }
            out.append(in_.substr(run, pos_ - run));
            pos_++;
            if (pos_ >= in_.size())
                return fail("unterminated string");
            char e = in_[pos_++];
            switch (e) {
            case '"':
            case '\\':
            case '/':
                out.push_back(e);
                break;
            case 'b':
                out.push_back('\b');
                break;
            case 'f':
                out.push_back('\f');
                break;
            case 'n':
                out.push_back('\n');
                break;
            case 'r':
                out.push_back('\r');
                break;
            case 't':
                out.push_back('\t');
                break;
            case 'u': {
                unsigned cp = 0;
                if (!hex4(cp))
                    return false;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned low = 0;
                    if (in_.substr(pos_, 2) != "\\u")
                        return fail("unpaired surrogate");
                    pos_ += 2;
                    if (!hex4(low) || low < 0xDC00 || low > 0xDFFF)
                        return fail("unpaired surrogate");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return fail("unpaired surrogate");
                }
                append_utf8(out, cp);
                break;
            }
            default:
                return fail("invalid escape");
            }
            run = pos_;
        }
    }

    std::string_view in_;
    Duplicates duplicates_;
    size_t pos_ = 0;
};

} // namespace

bool parse(std::string_view input, Value &out, std::string &error, Duplicates duplicates)
{
    out = Value(); // nothing of an earlier parse survives into this one
    Parser p(input, duplicates);
    if (!p.document(out)) {
        error = p.error;
        return false;
    }
    return true;
}

} // namespace json_body
