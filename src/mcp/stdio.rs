//! Stdio for the server, with JSON-RPC errors answered. rmcp skips a line that is not JSON
//! without a word, drops a line over its 16 MiB limit without an answer, and an invalid UTF-8
//! line used to end the reading; JSON-RPC 2.0 says such a message gets error -32700 (id null).
//! So stdin is read here, a line at a time and never more than [`MAX_LINE`] of it held:
//! messages go on to rmcp, anything else is answered ([`super::jsonrpc::check`]). rmcp's
//! messages and those answers reach stdout through one task, a whole line at a time, so they
//! never interleave. Why the server stops is logged on stderr.

use super::WitnessServer;
use super::jsonrpc;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The longest line taken, its newline included: rmcp's own limit, so every line passed on is
/// one rmcp reads.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line (without its newline).
    Bytes(Vec<u8>),
    /// A line longer than [`MAX_LINE`]: read to its end and dropped.
    TooLong,
    /// End of input.
    End,
}

/// Read one line, holding at most [`MAX_LINE`] bytes of it.
pub async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            // End of input: a last line without a newline still counts.
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Bytes(line),
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !too_long && line.len() + take > MAX_LINE {
            too_long = true;
            line = Vec::new();
        }
        if !too_long {
            line.extend_from_slice(&available[..newline.unwrap_or(take)]);
        }
        r.consume(take);
        if newline.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Bytes(line)
            });
        }
    }
}

pub(super) async fn serve(server: WitnessServer) -> anyhow::Result<()> {
    let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::unbounded_channel::<String>();

    let reader = tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        let why = loop {
            let bytes = match read_line(&mut stdin).await {
                Ok(Line::End) => break "its input ended".to_string(),
                Err(e) => break format!("reading its input failed: {e}"),
                Ok(Line::TooLong) => {
                    tracing::warn!("a line over {MAX_LINE} bytes was answered with -32700");
                    let _ = errors_tx.send(
                        jsonrpc::error(
                            serde_json::Value::Null,
                            jsonrpc::PARSE_ERROR,
                            &format!("Parse error: the line is longer than {MAX_LINE} bytes"),
                        )
                        .to_string(),
                    );
                    continue;
                }
                Ok(Line::Bytes(b)) => b,
            };
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Some(answer) = jsonrpc::check(&bytes) {
                let _ = errors_tx.send(answer.to_string());
                continue;
            }
            let mut bytes = bytes;
            bytes.push(b'\n');
            if to_server.write_all(&bytes).await.is_err() {
                break "the MCP service stopped reading".to_string();
            }
        };
        // End of input: rmcp sees the end of its stream and the service stops.
        let _ = to_server.shutdown().await;
        why
    });

    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut lines = BufReader::new(from_server).lines();
        let mut errors_open = true;
        loop {
            let line = tokio::select! {
                l = lines.next_line() => match l {
                    Ok(Some(l)) => l,
                    _ => break None,
                },
                e = errors_rx.recv(), if errors_open => match e {
                    Some(e) => e,
                    None => {
                        errors_open = false;
                        continue;
                    }
                },
            };
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if let Err(e) = stdout.write_all(&bytes).await {
                break Some(format!("writing to its output failed: {e}"));
            }
            if let Err(e) = stdout.flush().await {
                break Some(format!("writing to its output failed: {e}"));
            }
        }
    });

    let running = server.serve((server_in, server_out)).await?;
    let quit = running.waiting().await;
    let why = if reader.is_finished() {
        reader
            .await
            .unwrap_or_else(|e| format!("its reader failed: {e}"))
    } else {
        reader.abort();
        format!("the MCP service ended ({quit:?})")
    };
    let write_problem = writer.await.ok().flatten();
    // An MCP client shows stderr to its user: one line that says why the server is gone.
    let why = write_problem.unwrap_or(why);
    tracing::info!("conduct-walker mcp stopped: {why}");
    crate::errln!("conduct-walker mcp: stopped: {why}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_over_the_limit_are_dropped_whole_and_reading_goes_on() {
        let mut input = Vec::new();
        input.extend_from_slice(b"first\n");
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        input.extend_from_slice(b"\n\xff\xfe\nlast");
        let mut r = BufReader::with_capacity(8192, &input[..]);
        assert_eq!(
            read_line(&mut r).await.unwrap(),
            Line::Bytes(b"first".to_vec())
        );
        assert_eq!(read_line(&mut r).await.unwrap(), Line::TooLong);
        assert_eq!(
            read_line(&mut r).await.unwrap(),
            Line::Bytes(b"\xff\xfe".to_vec())
        );
        assert_eq!(
            read_line(&mut r).await.unwrap(),
            Line::Bytes(b"last".to_vec())
        );
        assert_eq!(read_line(&mut r).await.unwrap(), Line::End);
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_taken() {
        let mut input = vec![b'y'; MAX_LINE - 1];
        input.push(b'\n');
        let mut r = BufReader::new(&input[..]);
        match read_line(&mut r).await.unwrap() {
            Line::Bytes(b) => assert_eq!(b.len(), MAX_LINE - 1),
            other => panic!("{other:?}"),
        }
    }
}
