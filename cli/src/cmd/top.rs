//! `berth top nodes` and `berth top pods`: the latest usage the agents reported, as
//! `kubectl top` prints it (cpu in millicores, memory in MiB; nodes with percentages of
//! their allocatable). Also the connection to the `Telemetry` service, which `berth logs`
//! shares.

use anyhow::bail;
use berth_proto::pb;
use berth_proto::pb::telemetry_client::TelemetryClient;
use berth_proto::Quantity;
use clap::{Args, ValueEnum};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::Context;
use crate::client::BearerToken;
use crate::output::Table;

/// The generated Telemetry client over a channel that carries the bearer token.
pub type Telemetry = TelemetryClient<InterceptedService<Channel, BearerToken>>;

/// Connects to the scheduler's Telemetry service, with the same address, token and CA as
/// every other verb.
pub async fn connect_telemetry(ctx: &Context<'_>) -> anyhow::Result<Telemetry> {
    let (channel, token) = crate::client::connect_channel(&ctx.target()?).await?;
    Ok(TelemetryClient::with_interceptor(channel, token))
}

/// A refused Telemetry call as one error line: the server's message, or the code when the
/// message is empty (an older scheduler answers `Unimplemented` with none).
pub fn status_error(status: &tonic::Status) -> anyhow::Error {
    if status.message().is_empty() {
        anyhow::anyhow!("the scheduler refused the call: {:?}", status.code())
    } else {
        anyhow::anyhow!("{}", status.message())
    }
}

/// What `berth top` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TopResource {
    /// Nodes.
    #[value(alias = "node", alias = "no")]
    Nodes,
    /// Pods.
    #[value(alias = "pod", alias = "po")]
    Pods,
}

/// Flags of `berth top`.
#[derive(Args, Debug, Clone)]
pub struct TopArgs {
    /// `nodes` or `pods`.
    #[arg(value_enum)]
    pub resource: TopResource,
    /// Pods of every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Leave out the header line.
    #[arg(long)]
    pub no_headers: bool,
}

/// Millicores of a cpu quantity string, as kubectl prints them (`250m`).
fn cpu_cell(cpu: &str) -> Option<(String, i64)> {
    let q = Quantity::parse(cpu).ok()?;
    Some((format!("{}m", q.millis()), q.millis()))
}

/// MiB of a memory quantity string, as kubectl prints them (`300Mi`).
fn memory_cell(memory: &str) -> Option<(String, i64)> {
    let q = Quantity::parse(memory).ok()?;
    Some((format!("{}Mi", q.value() / (1024 * 1024)), q.value()))
}

/// `used` as a whole percentage of `total` (`<unknown>` without a total).
fn percent(used: i64, total: Option<i64>) -> String {
    match total {
        Some(total) if total > 0 => format!("{}%", (i128::from(used) * 100 / i128::from(total))),
        _ => "<unknown>".into(),
    }
}

/// The node table: `NAME CPU(cores) CPU% MEMORY(bytes) MEMORY%`; a node without usage shows
/// `<unknown>`.
pub fn nodes_table(nodes: &[pb::NodeMetrics]) -> Table {
    let mut table = Table::new(["NAME", "CPU(cores)", "CPU%", "MEMORY(bytes)", "MEMORY%"]);
    for n in nodes {
        match (cpu_cell(&n.cpu), memory_cell(&n.memory)) {
            (Some((cpu, cpu_millis)), Some((memory, bytes))) => {
                let cpu_total = Quantity::parse(&n.cpu_allocatable).ok().map(|q| q.millis());
                let memory_total = Quantity::parse(&n.memory_allocatable)
                    .ok()
                    .map(|q| q.value());
                table.row(vec![
                    n.name.clone(),
                    cpu,
                    percent(cpu_millis, cpu_total),
                    memory,
                    percent(bytes, memory_total),
                ]);
            }
            _ => table.row(vec![
                n.name.clone(),
                "<unknown>".into(),
                "<unknown>".into(),
                "<unknown>".into(),
                "<unknown>".into(),
            ]),
        }
    }
    table
}

/// The pod table: `NAME CPU(cores) MEMORY(bytes)`, with `NAMESPACE` first for `-A`.
pub fn pods_table(pods: &[pb::PodMetrics], all_namespaces: bool) -> Table {
    let mut header = vec!["NAME", "CPU(cores)", "MEMORY(bytes)"];
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    let mut table = Table::new(header);
    for p in pods {
        let cpu = cpu_cell(&p.cpu).map_or_else(|| "<unknown>".into(), |c| c.0);
        let memory = memory_cell(&p.memory).map_or_else(|| "<unknown>".into(), |m| m.0);
        let mut row = vec![p.name.clone(), cpu, memory];
        if all_namespaces {
            row.insert(0, p.namespace.clone());
        }
        table.row(row);
    }
    table
}

/// Runs `berth top`.
pub async fn run(args: TopArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let mut client = connect_telemetry(ctx).await?;
    let (kind, namespace) = match args.resource {
        TopResource::Nodes => (pb::Kind::Node, String::new()),
        TopResource::Pods if args.all_namespaces => (pb::Kind::Pod, String::new()),
        TopResource::Pods => (pb::Kind::Pod, ctx.namespace().to_string()),
    };
    let response = client
        .top(pb::TopRequest {
            kind: kind as i32,
            namespace: namespace.clone(),
        })
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    let table = match args.resource {
        TopResource::Nodes => {
            if response.nodes.is_empty() {
                bail!("metrics not available yet");
            }
            nodes_table(&response.nodes)
        }
        TopResource::Pods => {
            if response.pods.is_empty() {
                if args.all_namespaces {
                    bail!("metrics not available yet");
                }
                bail!("no pod metrics found in {namespace} namespace");
            }
            pods_table(&response.pods, args.all_namespaces)
        }
    };
    ctx.print(&table.render(!args.no_headers))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_like_kubectl_top() {
        struct Case {
            name: &'static str,
            got: String,
            want: Vec<Vec<&'static str>>,
        }
        let node = |name: &str, cpu: &str, memory: &str| pb::NodeMetrics {
            name: name.into(),
            cpu: cpu.into(),
            memory: memory.into(),
            cpu_allocatable: "4".into(),
            memory_allocatable: "1Gi".into(),
            ..Default::default()
        };
        let pod = |ns: &str, name: &str, cpu: &str, memory: &str| pb::PodMetrics {
            namespace: ns.into(),
            name: name.into(),
            cpu: cpu.into(),
            memory: memory.into(),
            ..Default::default()
        };
        let cases = vec![
            Case {
                name: "nodes with percentages and a node without metrics",
                got: nodes_table(&[node("n1", "1", "512Mi"), node("n2", "", "")]).render(true),
                want: vec![
                    vec!["NAME", "CPU(cores)", "CPU%", "MEMORY(bytes)", "MEMORY%"],
                    vec!["n1", "1000m", "25%", "512Mi", "50%"],
                    vec!["n2", "<unknown>", "<unknown>", "<unknown>", "<unknown>"],
                ],
            },
            Case {
                name: "pods",
                got: pods_table(&[pod("default", "web", "250m", "300Mi")], false).render(true),
                want: vec![
                    vec!["NAME", "CPU(cores)", "MEMORY(bytes)"],
                    vec!["web", "250m", "300Mi"],
                ],
            },
            Case {
                name: "pods of every namespace",
                got: pods_table(&[pod("kube", "dns", "0", "1500Ki")], true).render(false),
                want: vec![vec!["kube", "dns", "0m", "1Mi"]],
            },
        ];
        for case in cases {
            let got: Vec<Vec<String>> = case
                .got
                .lines()
                .map(|l| l.split_whitespace().map(str::to_string).collect())
                .collect();
            let got: Vec<Vec<&str>> = got
                .iter()
                .map(|r| r.iter().map(String::as_str).collect())
                .collect();
            // "CPU(cores)" etc. have no spaces, so splitting on whitespace recovers cells.
            assert_eq!(got, case.want, "{}", case.name);
        }
    }
}
