//! The process's heap, as glibc keeps it (issue 27).
//!
//! A long-running face (the daemon, `records serve`, the MCP server) builds a few large values
//! now and then: a status page (an overview of 100 targets is ~1 MB of HTML, ~7 MB at its peak
//! while rendered), an API listing. glibc keeps what they freed inside the arena that served
//! them, and an arena only shrinks from its top, so every such request left the resident size a
//! few MB higher although the live heap stayed at ~2-4 MB (heaptrack over 30,000 walks: flat;
//! `malloc_trim(0)` on the running daemon: 28.4 → 17.6 MiB). [`release_free_heap`] hands the
//! free pages back after such a request and once a minute from the daemon's loop.

/// At most two malloc arenas (glibc gives each thread its own, up to 8 per core, each keeping
/// its own free memory). Two keep lock contention low for the two async workers. Call before the
/// runtime starts threads; `MALLOC_ARENA_MAX` in the environment still wins.
pub fn bound_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

/// Return the free pages of every arena to the system (`malloc_trim(0)`; ~a millisecond).
pub fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}
