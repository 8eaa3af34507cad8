//! `berth logs POD [-c CONTAINER] [-f]`: a container's output, as its agent keeps it. The
//! scheduler fetches it from the pod's agent over the agent's session stream, so the CLI
//! needs no route to the node; `-f` follows until the pod stops or Ctrl-C.

use std::io::Write;

use berth_proto::pb;
use clap::Args;
use tokio_stream::StreamExt;

use super::top::{connect_telemetry, status_error};
use super::Context;

/// Flags of `berth logs`.
#[derive(Args, Debug, Clone)]
pub struct LogsArgs {
    /// The pod (`web` or `pod/web`).
    #[arg(value_name = "POD")]
    pub pod: String,
    /// The container; may be left out when the pod has one.
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// Keep printing what the container writes, until the pod stops.
    #[arg(short = 'f', long)]
    pub follow: bool,
}

/// The pod name of a `POD` argument: `web`, `pod/web` or `pods/web`.
pub fn pod_name(arg: &str) -> anyhow::Result<&str> {
    let name = match arg.split_once('/') {
        Some(("pod" | "pods" | "po", name)) => name,
        Some((kind, _)) => anyhow::bail!("berth logs works on pods, not {kind:?}"),
        None => arg,
    };
    if name.is_empty() {
        anyhow::bail!("a pod name is required");
    }
    Ok(name)
}

/// Runs `berth logs`.
pub async fn run(args: LogsArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let name = pod_name(&args.pod)?.to_string();
    let mut client = connect_telemetry(ctx).await?;
    let mut stream = client
        .logs(pb::LogsRequest {
            namespace: ctx.namespace().to_string(),
            name,
            container: args.container.unwrap_or_default(),
            follow: args.follow,
        })
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        match next {
            None => return Ok(()),
            Some(Ok(chunk)) => {
                ctx.io.out.write_all(&chunk.data)?;
                ctx.io.out.flush()?;
            }
            Some(Err(status)) => return Err(status_error(&status)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_arguments() {
        struct Case {
            name: &'static str,
            arg: &'static str,
            want: Result<&'static str, &'static str>,
        }
        let cases = [
            Case {
                name: "bare",
                arg: "web",
                want: Ok("web"),
            },
            Case {
                name: "pod/",
                arg: "pod/web",
                want: Ok("web"),
            },
            Case {
                name: "pods/",
                arg: "pods/web",
                want: Ok("web"),
            },
            Case {
                name: "other kind",
                arg: "node/n1",
                want: Err("berth logs works on pods"),
            },
            Case {
                name: "empty",
                arg: "pod/",
                want: Err("a pod name is required"),
            },
        ];
        for case in cases {
            match (pod_name(case.arg), case.want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{}", case.name),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{}: {e}", case.name),
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }
}
