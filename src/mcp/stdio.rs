//! Stdio for the server, with JSON-RPC parse errors answered. rmcp skips a line that is not
//! JSON without a word; JSON-RPC 2.0 says such a line gets error -32700 (id null). So stdin is
//! read here line by line: JSON goes on to rmcp, anything else is answered. Both rmcp's
//! messages and those answers reach stdout through one task, a whole line at a time, so they
//! never interleave.

use super::WitnessServer;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The answer to a line that is not JSON.
pub const PARSE_ERROR: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}"#;

pub(super) async fn serve(server: WitnessServer) -> anyhow::Result<()> {
    let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::unbounded_channel::<&'static str>();

    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            if serde_json::from_str::<serde_json::Value>(&line).is_err() {
                let _ = errors_tx.send(PARSE_ERROR);
                continue;
            }
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if to_server.write_all(&bytes).await.is_err() {
                break;
            }
        }
        // End of input: rmcp sees the end of its stream and the service stops.
        let _ = to_server.shutdown().await;
    });

    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut lines = BufReader::new(from_server).lines();
        let mut errors_open = true;
        loop {
            let line = tokio::select! {
                l = lines.next_line() => match l {
                    Ok(Some(l)) => l,
                    _ => break,
                },
                e = errors_rx.recv(), if errors_open => match e {
                    Some(e) => e.to_string(),
                    None => {
                        errors_open = false;
                        continue;
                    }
                },
            };
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if stdout.write_all(&bytes).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });

    let running = server.serve((server_in, server_out)).await?;
    let _ = running.waiting().await;
    reader.abort();
    let _ = writer.await;
    Ok(())
}
