/*
 * A deliberate memory error, for test/run: before a suite runs under a sanitizer or Valgrind, this
 * program is run the way the servers are (same options, same user, same report directory), and
 * exactly one report must appear. It proves that "no report" afterwards means no error, not a
 * report that went nowhere.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    volatile char *p = malloc(16);
    p[0] = 'x';
    free((void *) p);
    /* read after free: AddressSanitizer's heap-use-after-free, Valgrind's invalid read */
    printf("%d\n", p[0]);
    return 0;
}
