//! Container logs for `berth logs`: the scheduler asks for them over the session stream
//! (an `AgentLogsRequest`), and the agent sends the log file in `LogChunk`s, following it
//! while the pod runs when asked to. The path goes through the scheduler so that it is
//! authenticated like every other call and needs no port on the node.

use std::sync::Arc;
use std::time::Duration;

use berth_proto::pb;
use berth_proto::pb::agent_message::Msg as Up;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::runtime::Runtime;

/// Largest chunk of a log sent in one message.
const CHUNK_BYTES: usize = 32 * 1024;
/// How often a followed log is checked for new output.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

fn chunk(request_id: &str, data: Vec<u8>, end: bool, error: String) -> pb::AgentMessage {
    pb::AgentMessage {
        msg: Some(Up::LogChunk(pb::LogChunk {
            request_id: request_id.to_string(),
            data,
            end,
            error,
        })),
    }
}

/// Sends the log of the requested container to `out`, then, with `follow`, what it writes
/// until the pod stops or `cancel` fires; the last chunk has `end` set. Ends quietly when
/// `out` closes (the session ended).
pub async fn send_logs(
    runtime: Arc<dyn Runtime>,
    node_name: String,
    request: pb::AgentLogsRequest,
    out: mpsc::Sender<pb::AgentMessage>,
    cancel: CancellationToken,
) {
    let id = request.request_id.clone();
    let Some(path) = runtime.log_path(&request.uid, &request.container) else {
        let error = format!(
            "container {:?} of pod {}/{} has no logs on node {node_name} (runtime {})",
            request.container,
            request.namespace,
            request.name,
            runtime.name()
        );
        let _ = out.send(chunk(&id, Vec::new(), true, error)).await;
        return;
    };
    let mut file = match tokio::fs::File::open(&path).await {
        Ok(f) => f,
        Err(e) => {
            let error = format!("opening {}: {e}", path.display());
            let _ = out.send(chunk(&id, Vec::new(), true, error)).await;
            return;
        }
    };
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let n = match file.read(&mut buf).await {
            Ok(n) => n,
            Err(e) => {
                let error = format!("reading {}: {e}", path.display());
                let _ = out.send(chunk(&id, Vec::new(), true, error)).await;
                return;
            }
        };
        if n > 0 {
            if out
                .send(chunk(&id, buf[..n].to_vec(), false, String::new()))
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        // At the end of what was written so far.
        let running = runtime
            .report(&request.uid)
            .is_some_and(|r| !r.status.phase.is_terminal());
        if !request.follow || !running {
            break;
        }
        tokio::select! {
            () = cancel.cancelled() => {
                debug!(request = %id, "log reader cancelled");
                return;
            }
            () = tokio::time::sleep(FOLLOW_POLL) => {}
        }
    }
    let _ = out.send(chunk(&id, Vec::new(), true, String::new())).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::SimRuntime;

    #[tokio::test]
    async fn a_runtime_without_logs_says_so() {
        let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(""));
        let (tx, mut rx) = mpsc::channel(4);
        send_logs(
            runtime,
            "sim-1".into(),
            pb::AgentLogsRequest {
                request_id: "r1".into(),
                namespace: "default".into(),
                name: "web".into(),
                uid: "u".into(),
                container: "main".into(),
                follow: true,
            },
            tx,
            CancellationToken::new(),
        )
        .await;
        match rx.recv().await.and_then(|m| m.msg) {
            Some(Up::LogChunk(c)) => {
                assert!(c.end);
                assert_eq!(c.request_id, "r1");
                assert!(c.error.contains("has no logs on node sim-1"), "{}", c.error);
            }
            other => panic!("expected a final chunk, got {other:?}"),
        }
    }
}
