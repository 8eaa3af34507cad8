//! Replicas and their leader: every replica serves the API and agent sessions, but only the
//! elected leader runs the leader-only loops — the scheduling loop (with the writer of its
//! binds, statuses and events) and the controllers (workloads, node lifecycle, taint
//! eviction) — and all of them write through a [`FencedStore`] on its leadership's guard, so
//! a deposed leader's writes are refused and change nothing.
//!
//! A replica campaigns; once it leads it starts a *term*: the loops over the fenced store,
//! under a cancel token of their own. When the leadership is lost (lease not renewed in
//! time, key taken over) the term's token fires at once, the loops stop and drop their
//! caches (they live in the term), and the replica campaigns again. On shutdown the leader
//! stops its loops, drains their writes, and resigns, so that a standby takes over without
//! waiting for the lease to expire.

use std::sync::Arc;

use berth_store::{Elector, FencedStore, ObjectStore};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::admission::AdmissionConfig;
use super::{events, node_lifecycle, scheduling, taint_eviction, writer};
use crate::profile::Profiles;

/// Pause before campaigning again after a campaign failed (the store unreachable).
const CAMPAIGN_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// What the leader-only loops are made from, kept across terms.
#[derive(Clone)]
pub struct LeaderConfig {
    /// The scheduling profiles.
    pub profiles: Profiles,
    /// Tie-break seed of the scheduling loop.
    pub seed: u64,
    /// Defaults the controllers apply to the pods they create.
    pub admission: AdmissionConfig,
    /// The node lifecycle controller's periods and rate.
    pub lifecycle: node_lifecycle::LifecycleConfig,
    /// When each node's agent was last heard from (fed by this replica's agent sessions).
    pub health: Arc<node_lifecycle::NodeHealth>,
    /// Where `berth describe`'s explain queries arrive, for the scheduling loop of the term.
    pub explain: Arc<scheduling::ExplainRelay>,
    /// This replica's name in the election and in the events it reports.
    pub identity: String,
}

/// The leader-only loops of one term, over one store.
pub struct LeaderLoops {
    threads: Vec<(&'static str, std::thread::JoinHandle<()>)>,
    writer: writer::Writer,
    writer_task: tokio::task::JoinHandle<()>,
    explain: tokio::task::JoinHandle<()>,
}

impl LeaderLoops {
    /// Starts the scheduling loop, its writer and the controllers over `store`, until `term`
    /// fires.
    pub fn start(
        store: Arc<dyn ObjectStore>,
        config: &LeaderConfig,
        term: &CancellationToken,
    ) -> Self {
        let (failures_tx, failures_rx) = tokio::sync::mpsc::unbounded_channel();
        let (writer, writer_task) = writer::Writer::spawn(store.clone(), failures_tx);
        let recorder = |component| {
            events::EventRecorder::new(writer.clone(), component).with_instance(&config.identity)
        };
        let scheduling = scheduling::SchedulingLoop::new(
            store.clone(),
            writer.clone(),
            failures_rx,
            recorder("default-scheduler"),
            config.profiles.clone(),
            config.seed,
        );
        let (scheduling, explainer) = scheduling.with_explainer();
        let explain = tokio::spawn({
            let (relay, term) = (config.explain.clone(), term.clone());
            async move { relay.forward(&explainer, &term).await }
        });
        let mut threads = vec![("scheduling loop", scheduling.spawn(term.clone()))];
        threads.push((
            "controllers",
            crate::controllers::ControllerManager::new(store.clone(), writer.clone())
                .with_admission(config.admission)
                .spawn(term.clone()),
        ));
        let lifecycle = node_lifecycle::NodeLifecycleController::new(
            store.clone(),
            config.health.clone(),
            config.lifecycle,
            recorder(node_lifecycle::COMPONENT),
        );
        threads.push((
            "node lifecycle",
            super::informer::spawn("node-lifecycle", {
                let term = term.clone();
                move || node_lifecycle::run(lifecycle, term)
            }),
        ));
        let taint_eviction = taint_eviction::TaintEvictionController::new(
            store.clone(),
            recorder(taint_eviction::COMPONENT),
        );
        threads.push((
            "taint eviction",
            super::informer::spawn("taint-eviction", {
                let term = term.clone();
                move || taint_eviction::run(taint_eviction, term)
            }),
        ));
        LeaderLoops {
            threads,
            writer,
            writer_task,
            explain,
        }
    }

    /// Waits for the loops to end (their term must have fired), then for the writer to
    /// drain what they queued.
    pub async fn stop(self) {
        for (name, thread) in self.threads {
            super::join_loop(name, thread).await;
        }
        // The loops held event recorders and the writer: only now can the writer end.
        drop(self.writer);
        if let Err(e) = self.writer_task.await {
            error!(error = %e, "the writer failed; writes queued at the end of the term may be lost");
        }
        let _ = self.explain.await;
    }
}

/// Runs the leader-only loops whenever this replica leads, until `shutdown` fires: campaigns
/// (on a blocking thread), runs a term over a [`FencedStore`] on the won leadership, stops
/// it the moment the leadership is lost and campaigns again. While it is a standby, explain
/// queries are answered with a refusal naming the reason.
pub async fn run(
    elector: Arc<dyn Elector>,
    store: Arc<dyn ObjectStore>,
    config: LeaderConfig,
    shutdown: CancellationToken,
) {
    loop {
        let standby = shutdown.child_token();
        let refusing = tokio::spawn({
            let (relay, standby) = (config.explain.clone(), standby.clone());
            async move {
                relay
                    .refuse(
                        "this replica is a standby: only the leader schedules",
                        &standby,
                    )
                    .await
            }
        });
        let campaign = campaign(elector.clone(), config.identity.clone());
        info!(identity = %config.identity, "campaigning for leadership");
        let won = tokio::select! {
            _ = shutdown.cancelled() => {
                standby.cancel();
                let _ = refusing.await;
                // A campaign still blocked is abandoned (its thread is not waited for: a
                // standby keeps campaigning while etcd is out of reach); a leadership it
                // wins later is dropped with it, which releases it.
                return;
            }
            won = campaign => won,
        };
        standby.cancel();
        let _ = refusing.await;
        let leadership = match won {
            Ok(Ok(leadership)) => leadership,
            Ok(Err(e)) => {
                warn!(error = %e, "campaign failed; retrying");
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    () = tokio::time::sleep(CAMPAIGN_RETRY) => continue,
                }
            }
            Err(_) => {
                error!("the campaign's thread failed; retrying");
                continue;
            }
        };
        info!(identity = %config.identity, "leading: starting the scheduling loop and controllers");
        let mut lost = leadership.lost();
        let term = shutdown.child_token();
        let fenced: Arc<dyn ObjectStore> =
            Arc::new(FencedStore::new(store.clone(), leadership.guard()));
        let loops = LeaderLoops::start(fenced, &config, &term);
        let deposed = tokio::select! {
            _ = shutdown.cancelled() => false,
            _ = lost.wait_for(|lost| *lost) => true,
        };
        term.cancel();
        if deposed {
            warn!(identity = %config.identity, "leadership lost: stopping the scheduling loop and controllers");
        }
        loops.stop().await;
        if !deposed {
            info!(identity = %config.identity, "shutting down: resigning leadership");
            leadership.resign();
            return;
        }
        drop(leadership);
    }
}

/// Campaigns on a thread of its own, detached: unlike a runtime's blocking task, the
/// runtime's shutdown does not wait for it, so a standby campaigning against an unreachable
/// etcd still exits on SIGTERM. The result arrives on the channel (which fails if the
/// thread panicked); dropping the receiver drops a leadership won later, releasing it.
fn campaign(
    elector: Arc<dyn Elector>,
    identity: String,
) -> tokio::sync::oneshot::Receiver<berth_store::Result<berth_store::Leadership>> {
    let (won, result) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("campaign".into())
        .spawn(move || {
            let _ = won.send(elector.campaign(&identity));
        });
    if let Err(e) = spawned {
        error!(error = %e, "cannot start the campaign's thread");
    }
    result
}

/// This replica's identity in the election: the host's name and a random suffix, as
/// kube-scheduler makes its own (`hostname_uuid`), so that two replicas on one host differ.
pub fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "berth-scheduler".to_string());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{NodeBuilder, PodBuilder};
    use berth_proto::model::{Kind, Object};
    use berth_store::{LocalElector, Op, SledStore};

    fn config(identity: &str) -> LeaderConfig {
        LeaderConfig {
            profiles: Profiles::default(),
            seed: 1,
            admission: AdmissionConfig::default(),
            lifecycle: node_lifecycle::LifecycleConfig {
                monitor_period: std::time::Duration::from_secs(5),
                grace_period: std::time::Duration::from_secs(50),
                eviction_rate: 0.1,
            },
            health: Arc::new(node_lifecycle::NodeHealth::new()),
            explain: scheduling::ExplainRelay::new(),
            identity: identity.to_string(),
        }
    }

    fn create_pod(store: &dyn ObjectStore, name: &str) {
        store
            .commit(vec![Op::Create(Object::Pod(Box::new(
                PodBuilder::new(name).build(),
            )))])
            .expect("create pod");
    }

    /// Who reported the Scheduled event of pod `name`, once it is bound.
    async fn scheduled_by(store: &dyn ObjectStore, name: &str) -> String {
        loop {
            let events = store.list(Kind::Event, None).expect("list events");
            let found = events.into_iter().find_map(|o| match o {
                Object::Event(e) if e.reason == "Scheduled" && e.involved_object.name == name => {
                    Some(e.reporting_instance)
                }
                _ => None,
            });
            if let Some(instance) = found {
                return instance;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn election_flags_are_checked_as_kube_scheduler_checks_them() {
        use clap::Parser;
        struct Case {
            name: &'static str,
            flags: &'static [&'static str],
            leader_elect: bool,
            error: Option<&'static str>,
        }
        let cases = [
            Case {
                name: "kube-scheduler's defaults",
                flags: &[],
                leader_elect: true,
                error: None,
            },
            Case {
                name: "off",
                flags: &["--leader-elect=false"],
                leader_elect: false,
                error: None,
            },
            Case {
                name: "bare flag",
                flags: &["--leader-elect"],
                leader_elect: true,
                error: None,
            },
            Case {
                name: "lease not above the renew deadline",
                flags: &["--leader-elect-lease-duration", "10s"],
                leader_elect: true,
                error: Some("--leader-elect-lease-duration (10s) must be greater than --leader-elect-renew-deadline (10s)"),
            },
            Case {
                name: "renew deadline too close to the retry period",
                flags: &["--leader-elect-retry-period", "9s"],
                leader_elect: true,
                error: Some("--leader-elect-renew-deadline (10s) must be greater than 1.2 × --leader-elect-retry-period (9s)"),
            },
        ];
        for case in cases {
            let argv = std::iter::once("berth-scheduler").chain(case.flags.iter().copied());
            let args = crate::server::cli::Command::parse_from(argv).args;
            assert_eq!(args.leader_elect, case.leader_elect, "{}", case.name);
            let got = args.election().err().map(|e| e.to_string());
            assert_eq!(got.as_deref(), case.error, "{}", case.name);
        }
    }

    /// An election that never decides: the campaign blocks for good (etcd out of reach).
    struct Undecided;

    impl Elector for Undecided {
        fn campaign(&self, _: &str) -> berth_store::Result<berth_store::Leadership> {
            loop {
                std::thread::park();
            }
        }
    }

    /// A standby still campaigning when shutdown comes ends, and so does its runtime: the
    /// campaign is not a blocking task the runtime's shutdown would wait for.
    #[test]
    fn a_standby_whose_campaign_hangs_still_shuts_down() {
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let _inside = runtime.enter();
            let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
            let shutdown = CancellationToken::new();
            let task = runtime.spawn(run(
                Arc::new(Undecided),
                store,
                config("standby"),
                shutdown.clone(),
            ));
            shutdown.cancel();
            runtime.block_on(task).expect("the replica's loop ends");
            drop(_inside);
            // Waits for the runtime's blocking tasks: a campaign among them would hang here.
            drop(runtime);
            let _ = done_tx.send(());
        });
        done.recv_timeout(std::time::Duration::from_secs(60))
            .expect("the runtime shut down with the campaign pending");
    }

    /// Of two replicas sharing a store, only the leader schedules; when it steps down (on
    /// shutdown it resigns) the standby takes over and schedules what comes next.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_the_leader_schedules_and_a_standby_takes_over() {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        store
            .commit(vec![Op::Create(Object::Node(Box::new(
                NodeBuilder::new("n1").build(),
            )))])
            .expect("create node");
        let elector: Arc<dyn Elector> = Arc::new(LocalElector::new());
        let stop_a = CancellationToken::new();
        let a = tokio::spawn(run(
            elector.clone(),
            store.clone(),
            config("a"),
            stop_a.clone(),
        ));
        create_pod(store.as_ref(), "first");
        let first = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            scheduled_by(store.as_ref(), "first"),
        )
        .await
        .expect("the first replica schedules");
        assert_eq!(first, "a");

        let stop_b = CancellationToken::new();
        let b = tokio::spawn(run(
            elector.clone(),
            store.clone(),
            config("b"),
            stop_b.clone(),
        ));
        stop_a.cancel();
        a.await.expect("replica a ends");
        create_pod(store.as_ref(), "second");
        let second = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            scheduled_by(store.as_ref(), "second"),
        )
        .await
        .expect("the standby takes over and schedules");
        assert_eq!(second, "b", "only the new leader schedules");
        stop_b.cancel();
        b.await.expect("replica b ends");
    }
}
