//! Standard output and standard error for every command that prints.
//!
//! SIGPIPE stays ignored in every command (Rust starts with it ignored): the TLS stack writes to
//! sockets with `writev`, which raises SIGPIPE when the peer has reset the connection, so with
//! the default action back a stranger's server could end the process (issue 42). A reader that
//! goes away (`conduct-walker records list | head -1`) then shows up as an EPIPE write error,
//! which `println!` would turn into a panic. Everything the faces print goes through
//! [`Stdout`] (and the [`outln!`](crate::outln) / [`out!`](crate::out) macros) instead: after the
//! first broken pipe, output is dropped and the command goes on to its end, so a walk whose
//! reader left still commits its record, files it, and exits with its own code. Loops that
//! print a long listing ask [`reader_gone`] to stop early.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Whether standard output's reader has gone away (an earlier write met a broken pipe): what
/// is printed from now on goes nowhere, so a listing may stop.
pub fn reader_gone() -> bool {
    READER_GONE.load(Ordering::Relaxed)
}

/// Standard output as a writer that takes a broken pipe for "nobody reads any more": the write
/// is reported done, and every later one is dropped. Other errors (a full disk behind a
/// redirect) are returned as they are.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stdout;

/// Standard output (see [`Stdout`]).
pub fn stdout() -> Stdout {
    Stdout
}

fn quiet_on_broken_pipe<T>(result: std::io::Result<T>, done: T) -> std::io::Result<T> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            READER_GONE.store(true, Ordering::Relaxed);
            Ok(done)
        }
        other => other,
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if reader_gone() {
            return Ok(buf.len());
        }
        quiet_on_broken_pipe(std::io::stdout().lock().write(buf), buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if reader_gone() {
            return Ok(());
        }
        quiet_on_broken_pipe(std::io::stdout().lock().write_all(buf), ())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if reader_gone() {
            return Ok(());
        }
        quiet_on_broken_pipe(std::io::stdout().lock().flush(), ())
    }
}

/// Print formatted text to standard output; a reader that went away is not an error (see
/// [`Stdout`]), and neither is any other failure to print: the command's work and exit code
/// do not depend on its terminal.
pub fn print(args: std::fmt::Arguments<'_>) {
    let _ = Stdout.write_fmt(args);
}

/// Print formatted text to standard error, ignoring a closed or failing stderr (`eprintln!`
/// would panic).
pub fn print_err(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `println!` through [`Stdout`]: never panics, never ends the process.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`Stdout`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::print(format_args!($($arg)*))
    };
}

/// `eprintln!` that ignores a closed standard error.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::print_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}
