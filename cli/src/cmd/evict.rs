//! `berth evict pod NAME... [-n NS] [--grace-period N]`: evicts pods through the Eviction
//! API, which refuses when a PodDisruptionBudget would be broken (the budget's message is
//! shown as is), printing `pod/web-abc12 evicted` for each pod that went.

use anyhow::bail;
use berth_proto::model::Kind;
use berth_proto::pb;
use clap::Args;

use super::{object_ref, parse_targets, Context, Reported, Targets};
use crate::client::{Api, ClientError};

/// Flags of `berth evict`.
#[derive(Args, Debug, Clone)]
pub struct EvictArgs {
    /// The pods: `pod NAME...` or `pod/NAME...`.
    #[arg(required = true, value_name = "pod NAME...")]
    pub resources: Vec<String>,
    /// Seconds the pod gets to stop (default: its terminationGracePeriodSeconds).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub grace_period: i64,
}

/// Sends one eviction. The error is the server's refusal as a [`ClientError`].
pub async fn evict_pod(
    api: &mut Api,
    namespace: &str,
    name: &str,
    grace_period: Option<i64>,
) -> Result<(), ClientError> {
    let request = pb::EvictRequest {
        namespace: namespace.to_string(),
        name: name.to_string(),
        grace_period_seconds: grace_period,
    };
    api.evict(request)
        .await
        .map(|_| ())
        .map_err(|status| ClientError::Rpc { status })
}

/// The grace period flag as the API takes it: negative means the pod's own.
pub fn grace_period(flag: i64) -> Option<i64> {
    (flag >= 0).then_some(flag)
}

/// Runs `berth evict`.
pub async fn run(args: EvictArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let pods: Vec<String> = match parse_targets(&args.resources)? {
        Targets::Named(named) => {
            if let Some((kind, _)) = named.iter().find(|(k, _)| *k != Kind::Pod) {
                bail!("only pods can be evicted, not {}", kind.plural());
            }
            named.into_iter().map(|(_, n)| n).collect()
        }
        Targets::Kinds { kinds, names } => {
            if kinds != [Kind::Pod] {
                bail!("only pods can be evicted");
            }
            if names.is_empty() {
                bail!("resource(s) were provided, but no name was specified");
            }
            names
        }
    };
    let namespace = ctx.namespace().to_string();
    let mut api = ctx.connect_api().await?;
    let mut failed = 0;
    for name in pods {
        let outcome = evict_pod(&mut api, &namespace, &name, grace_period(args.grace_period))
            .await
            .map(|()| format!("{} evicted", object_ref(Kind::Pod, &name)));
        ctx.report(outcome, &mut failed)?;
    }
    Reported::check(failed)
}
