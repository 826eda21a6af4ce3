// The extension's version, the Makefile's EXTVERSION, given to the compiler as a bare token
// (-DQUERYGATE_VERSION=0.1.0: no quotes to lose on their way through make and the shell) and
// made a string here.
#pragma once

#define QUERYGATE_STRINGIFY_(x) #x
#define QUERYGATE_STRINGIFY(x) QUERYGATE_STRINGIFY_(x)
#define QUERYGATE_VERSION_TEXT QUERYGATE_STRINGIFY(QUERYGATE_VERSION)
