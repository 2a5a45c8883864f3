#ifndef CLIBELF_SHIM_H
#define CLIBELF_SHIM_H
#include <gelf.h>
#include <libelf.h>
#endif
