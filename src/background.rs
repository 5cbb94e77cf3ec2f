//! Work that must not compete with the walks or the pages (issue 27): the status pages'
//! periodic verification of the whole store, which on a store of millions of records reads
//! gigabytes and checks a signature per row.

/// Run the calling thread, and the threads it starts afterwards (they inherit it), at the lowest
/// CPU priority (nice 19) and in the idle I/O class: such work then takes only what walks,
/// filing and page requests leave. Best effort: where the system refuses, the work still runs,
/// at normal priority.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid, setpriority and ioprio_set take plain integers and change only this
        // thread's scheduling.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 19);
            // IOPRIO_WHO_PROCESS (1) of this thread; IOPRIO_CLASS_IDLE (3) << IOPRIO_CLASS_SHIFT (13).
            libc::syscall(libc::SYS_ioprio_set, 1, tid, 3 << 13);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// This thread's nice value.
    fn this_thread_nice() -> i32 {
        // SAFETY: gettid and getpriority take plain integers and only read.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        }
    }

    #[test]
    fn a_lowered_thread_and_the_threads_it_starts_run_at_nice_19_and_others_do_not() {
        let before = this_thread_nice();
        let (own, child) = std::thread::spawn(|| {
            lower_this_thread();
            let child = std::thread::spawn(this_thread_nice).join().unwrap();
            (this_thread_nice(), child)
        })
        .join()
        .unwrap();
        assert_eq!((own, child), (19, 19));
        // The process's other threads keep theirs.
        assert_eq!(this_thread_nice(), before);
    }
}
