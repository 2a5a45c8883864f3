#ifndef CDEMANGLE_H
#define CDEMANGLE_H
#include <stddef.h>

/// Demangles an Itanium C++ symbol with libstdc++'s __cxa_demangle. Returns a malloc'd
/// string the caller frees, or NULL when the name is not a valid mangled name.
char *sa_demangle_cxx(const char *name);

/// Demangles a Swift symbol with the runtime's swift_demangle (present in every Swift
/// process on Linux). Returns a malloc'd string or NULL.
char *sa_demangle_swift(const char *name, size_t length);

#endif
