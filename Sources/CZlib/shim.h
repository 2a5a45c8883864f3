#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
// zlib: pprof files are gzip-compressed protobuf. deflateInit2 is a macro (it passes the
// header's version and struct size), which Swift cannot call: this wrapper can.
#include <zlib.h>

static inline int czlib_deflate_init_gzip(z_stream *stream, int level)
{
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

static inline int czlib_inflate_init_gzip(z_stream *stream)
{
    return inflateInit2(stream, 15 + 16);
}
#endif
