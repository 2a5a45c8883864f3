#include "CDemangle.h"

#include <stdint.h>
#include <stdlib.h>

extern char *__cxa_demangle(const char *mangled, char *output, size_t *length, int *status);
// Exported by libswiftCore; declared here because it has no public header.
extern char *swift_demangle(const char *mangled, size_t length, char *output, size_t *outputLength,
                            uint32_t flags);

char *sa_demangle_cxx(const char *name) {
  int status = 0;
  char *result = __cxa_demangle(name, NULL, NULL, &status);
  if (status != 0) {
    free(result);
    return NULL;
  }
  return result;
}

char *sa_demangle_swift(const char *name, size_t length) {
  return swift_demangle(name, length, NULL, NULL, 0);
}
