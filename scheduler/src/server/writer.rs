//! Batched writes: the scheduling loop's binds, status updates and events go through one
//! task that commits whatever has queued up in a single store transaction, so one disk flush
//! serves many writes (group commit). If a batch fails, its writes are retried one by one so
//! that one stale write cannot sink the others.

use std::sync::Arc;

use berth_store::{ObjectStore, Op};
use tokio::sync::mpsc;
use tracing::{debug, error, warn};

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 512;

/// One write and who wants to hear that it failed.
pub struct Write {
    /// Operations committed in the same transaction, before `op`, all or none with it (a
    /// binding's ResourceClaim status updates, kube's PreBind).
    pub before: Vec<Op>,
    /// The store operation.
    pub op: Op,
    /// What to tell the scheduling loop if this write fails (binds only).
    pub on_failure: Option<FailureNotice>,
}

impl Write {
    /// Its operations in commit order.
    fn ops(&self) -> Vec<Op> {
        let mut ops = self.before.clone();
        ops.push(self.op.clone());
        ops
    }
}

/// A failed write, reported back to the scheduling loop.
#[derive(Debug)]
pub struct FailureNotice {
    /// uid of the pod whose write failed.
    pub pod_uid: String,
    /// Why, filled in by the writer.
    pub error: String,
}

/// Sends writes to the writer task.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::UnboundedSender<Write>,
}

impl Writer {
    /// Starts the writer task; failures of writes that asked for it go to `failures`.
    pub fn spawn(
        store: Arc<dyn ObjectStore>,
        failures: mpsc::UnboundedSender<FailureNotice>,
    ) -> (Writer, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let handle = tokio::spawn(run(store, rx, failures));
        (Writer { tx }, handle)
    }

    /// Queues a write. Returns false if the writer has stopped.
    pub fn submit(&self, write: Write) -> bool {
        self.tx.send(write).is_ok()
    }
}

async fn run(
    store: Arc<dyn ObjectStore>,
    mut rx: mpsc::UnboundedReceiver<Write>,
    failures: mpsc::UnboundedSender<FailureNotice>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let writes = std::mem::take(&mut batch);
        let count = writes.len();
        // Who to tell should the commit task itself fail (panic) with the writes inside.
        let notices: Vec<String> = writes
            .iter()
            .filter_map(|w| w.on_failure.as_ref().map(|n| n.pod_uid.clone()))
            .collect();
        let store = store.clone();
        let started = std::time::Instant::now();
        let committed = tokio::task::spawn_blocking(move || commit(store.as_ref(), writes)).await;
        super::metrics::store_commit(count, started.elapsed());
        let failed = match committed {
            Ok(failed) => failed,
            Err(e) => {
                error!(writes = count, error = %e, "a batch of writes failed to run; its writes are lost");
                notices
                    .into_iter()
                    .map(|pod_uid| FailureNotice {
                        pod_uid,
                        error: e.to_string(),
                    })
                    .collect()
            }
        };
        for notice in failed {
            // The loop may have stopped during shutdown; nothing to tell then.
            let _ = failures.send(notice);
        }
    }
    debug!("writer stopped");
}

/// Commits the batch, or each write alone if the batch fails; returns the failure notices.
fn commit(store: &dyn ObjectStore, writes: Vec<Write>) -> Vec<FailureNotice> {
    let ops: Vec<Op> = writes.iter().flat_map(Write::ops).collect();
    if writes.len() > 1 && store.commit(ops).is_ok() {
        return Vec::new();
    }
    let mut failed = Vec::new();
    for write in writes {
        if let Err(e) = store.commit(write.ops()) {
            debug!(error = %e, "write failed");
            match write.on_failure {
                Some(mut notice) => {
                    notice.error = e.to_string();
                    failed.push(notice);
                }
                None => {
                    if !matches!(
                        e,
                        berth_store::Error::Conflict { .. } | berth_store::Error::NotFound { .. }
                    ) {
                        warn!(error = %e, "write failed");
                    }
                }
            }
        }
    }
    failed
}
