#ifndef CLZMA_SHIM_H
#define CLZMA_SHIM_H
// liblzma: .gnu_debugdata (MiniDebugInfo) is an xz stream; lzma_crc32 is the CRC-32 that
// .gnu_debuglink records.
#include <lzma.h>
#endif
