// The write operations' table: see write_ops.hpp.
#include "rules/write_ops.hpp"

#include "common/chars.hpp"

namespace write_ops {

namespace {

bool same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (chars::to_lower(*a) != *b)
            return false;
    return *a == *b;
}

} // namespace

int from_name(const char *name)
{
    if (name == nullptr)
        return 0;
    for (const Op &op : all)
        if (same_name(name, op.name))
            return op.bit;
    return 0;
}

} // namespace write_ops
