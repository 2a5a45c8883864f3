#ifndef CLIBUNWIND_SHIM_H
#define CLIBUNWIND_SHIM_H

// The generic (remote) x86-64 libunwind: unw_* names are macros for _Ux86_64_*, which
// Swift cannot see, so each call we need is wrapped in a static inline function.
#include <libunwind.h>

// Not in the public headers, but exported and used the same way by perf: looks up the FDE
// for `ip` through an .eh_frame_hdr binary-search table described by `di`.
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
                                              unw_dyn_info_t *di, unw_proc_info_t *pi,
                                              int need_unwind_info, void *arg);

static inline unw_addr_space_t sa_unw_create_addr_space(unw_accessors_t *a) {
  return unw_create_addr_space(a, 0);
}
static inline void sa_unw_destroy_addr_space(unw_addr_space_t as) { unw_destroy_addr_space(as); }
static inline int sa_unw_set_caching_policy(unw_addr_space_t as, int global) {
  return unw_set_caching_policy(as, global ? UNW_CACHE_GLOBAL : UNW_CACHE_NONE);
}
static inline void sa_unw_flush_cache(unw_addr_space_t as) { unw_flush_cache(as, 0, 0); }
static inline int sa_unw_init_remote(unw_cursor_t *c, unw_addr_space_t as, void *arg) {
  return unw_init_remote(c, as, arg);
}
static inline int sa_unw_step(unw_cursor_t *c) { return unw_step(c); }
static inline int sa_unw_get_ip(unw_cursor_t *c, unw_word_t *v) { return unw_get_reg(c, UNW_REG_IP, v); }
static inline int sa_unw_get_sp(unw_cursor_t *c, unw_word_t *v) { return unw_get_reg(c, UNW_REG_SP, v); }
static inline int sa_unw_is_signal_frame(unw_cursor_t *c) { return unw_is_signal_frame(c); }
static inline int sa_unw_search_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                      unw_proc_info_t *pi, int need, void *arg) {
  return _Ux86_64_dwarf_search_unwind_table(as, ip, di, pi, need, arg);
}

#endif
