#ifndef CLIBDW_SHIM_H
#define CLIBDW_SHIM_H
// libdw (elfutils) reads DWARF from the same libelf handles CLibelf opens.
#include <dwarf.h>
#include <elfutils/libdw.h>
// zlib, which libdw itself uses, for inflating only the debug sections a stack needs.
#include <zlib.h>
#endif
