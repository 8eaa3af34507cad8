//! `berth delete`: objects by name (`delete pod web`, `delete pod/web`), by selector
//! (`-l`, `--all`) or as named in manifests (`-f`), printing `pod "web" deleted` for each and
//! waiting, as kubectl does, until a gracefully deleted object is gone.

use std::time::{Duration, Instant};

use anyhow::bail;
use berth_proto::model::{Kind, Object};
use clap::{ArgAction, Args};

use super::{is_not_found, parse_targets, Context, Reported, Targets};
use crate::client::Client;
use crate::manifest;
use crate::output::kind_display;

/// How often to check whether a deleted object is gone.
const WAIT_POLL: Duration = Duration::from_millis(200);

/// Flags of `berth delete`.
#[derive(Args, Debug, Clone)]
pub struct DeleteArgs {
    /// What to delete: `TYPE NAME...`, `TYPE/NAME...`, or `TYPE` with `-l` or `--all`.
    #[arg(value_name = "TYPE [NAME]...")]
    pub resources: Vec<String>,
    /// Delete the objects named in these manifests (files, folders, `-` for stdin).
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<String>,
    /// Delete the objects of the type matching this label selector.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Delete every object of the type in the namespace.
    #[arg(long)]
    pub all: bool,
    /// Treat "not found" as success.
    #[arg(long)]
    pub ignore_not_found: bool,
    /// Wait until the objects are gone (`--wait=false` to return at once).
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub wait: bool,
    /// How long to wait for the objects to be gone.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub timeout: Duration,
}

/// Runs `berth delete`.
pub async fn run(args: DeleteArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let targets = select_targets(&args, ctx)?;
    let mut client = ctx.connect().await?;
    let namespace = ctx.namespace().to_string();
    let targets = match targets {
        Selection::Objects(objects) => objects,
        Selection::Selector { kind, selector } => {
            let objects = client.list(kind, &namespace, &selector, "").await?;
            if objects.is_empty() {
                ctx.note(&if kind.is_namespaced() {
                    format!("No resources found in {namespace} namespace.")
                } else {
                    "No resources found".to_string()
                })?;
            }
            objects
                .into_iter()
                .map(|o| (kind, o.meta().namespace.clone(), o.meta().name.clone()))
                .collect()
        }
    };

    let mut failed = 0;
    let mut pending: Vec<(Kind, String, String, String)> = Vec::new();
    for (kind, ns, name) in targets {
        match client.delete(kind, &ns, &name, "").await {
            Ok(object) => {
                ctx.print(&format!("{} {name:?} deleted\n", kind_display(kind)))?;
                if let Some(object) = object.filter(is_terminating) {
                    pending.push((kind, ns, name, object.meta().uid.clone()));
                }
            }
            Err(e) if e.is_not_found() && args.ignore_not_found => {}
            Err(e) => {
                ctx.error_line(&e.to_string())?;
                failed += 1;
            }
        }
    }
    if args.wait {
        let deadline = Instant::now() + args.timeout;
        for (kind, ns, name, uid) in pending {
            if let Err(e) = wait_gone(&mut client, kind, &ns, &name, &uid, deadline).await {
                ctx.error_line(&e.to_string())?;
                failed += 1;
            }
        }
    }
    Reported::check(failed)
}

/// What the arguments select.
enum Selection {
    /// Objects by kind, namespace and name.
    Objects(Vec<(Kind, String, String)>),
    /// Every object of a kind matching a label selector (empty for `--all`).
    Selector {
        /// The kind.
        kind: Kind,
        /// kubectl label selector syntax.
        selector: String,
    },
}

fn select_targets(args: &DeleteArgs, ctx: &Context<'_>) -> anyhow::Result<Selection> {
    let namespace = ctx.namespace().to_string();
    if !args.filenames.is_empty() {
        if !args.resources.is_empty() {
            bail!("cannot specify both resource types and filenames (-f)");
        }
        let manifests = manifest::load(&args.filenames)?;
        let objects = manifests
            .into_iter()
            .map(|m| {
                let kind = m.object.kind();
                let meta = m.object.meta();
                let ns = if !kind.is_namespaced() {
                    String::new()
                } else if meta.namespace.is_empty() {
                    namespace.clone()
                } else {
                    meta.namespace.clone()
                };
                (kind, ns, meta.name.clone())
            })
            .collect();
        return Ok(Selection::Objects(objects));
    }
    if args.resources.is_empty() {
        bail!("you must provide one or more resources by argument or filename (-f)");
    }
    match parse_targets(&args.resources)? {
        Targets::Named(named) => {
            if args.all || args.selector.is_some() {
                bail!("name cannot be provided when a selector (-l) or --all is specified");
            }
            Ok(Selection::Objects(
                named
                    .into_iter()
                    .map(|(k, n)| (k, namespace.clone(), n))
                    .collect(),
            ))
        }
        Targets::Kinds { kinds, names } => {
            if !names.is_empty() {
                if args.all || args.selector.is_some() {
                    bail!("name cannot be provided when a selector (-l) or --all is specified");
                }
                let objects = kinds
                    .iter()
                    .flat_map(|k| names.iter().map(|n| (*k, namespace.clone(), n.clone())))
                    .collect();
                return Ok(Selection::Objects(objects));
            }
            let [kind] = kinds[..] else {
                bail!("delete by selector or --all takes one resource type");
            };
            match (&args.selector, args.all) {
                (Some(selector), false) => {
                    berth_proto::selector::parse(selector)?;
                    Ok(Selection::Selector {
                        kind,
                        selector: selector.clone(),
                    })
                }
                (None, true) => Ok(Selection::Selector {
                    kind,
                    selector: String::new(),
                }),
                (Some(_), true) => bail!("setting 'all' parameter but found a non empty selector"),
                (None, false) => bail!("resource(s) were provided, but no name was specified"),
            }
        }
    }
}

/// Whether the server marked the object for a graceful deletion rather than removing it.
fn is_terminating(object: &Object) -> bool {
    object.meta().deletion_timestamp.is_some()
}

/// Polls until the object is gone (or replaced by a new one with another uid).
async fn wait_gone(
    client: &mut Client,
    kind: Kind,
    namespace: &str,
    name: &str,
    uid: &str,
    deadline: Instant,
) -> anyhow::Result<()> {
    loop {
        match client.get(kind, namespace, name).await {
            Ok(object) if object.meta().uid != uid => return Ok(()),
            Ok(_) => {}
            Err(e) => {
                let e = anyhow::Error::from(e);
                if is_not_found(&e) {
                    return Ok(());
                }
                return Err(e);
            }
        }
        if Instant::now() >= deadline {
            bail!(
                "timed out waiting for {} {name:?} to be deleted",
                kind_display(kind)
            );
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}
