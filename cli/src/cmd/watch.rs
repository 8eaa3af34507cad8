//! `berth get -w` / `--watch` / `--watch-only`: the objects as `get` prints them, then one
//! line (or document) per change, as kubectl prints a watch: the header once (with the first
//! row printed), each later row aligned on its own, a deleted object printed once more, and
//! an object that stops matching `-l` or `--field-selector` printed once as it leaves. Ends on
//! Ctrl-C with exit code 0, or with an error when the server ends the watch.

use std::collections::HashSet;
use std::time::SystemTime;

use anyhow::bail;
use berth_proto::model::{Kind, Object};

use super::fields::FieldSelector;
use super::get::{self, GetArgs, Printer};
use super::{sort_objects, Context, Targets};
use crate::client::{Watch, WatchEventType};

/// What `get -w` watches: one kind, maybe only some names, filtered on the client.
pub struct WatchTarget {
    /// The kind.
    pub kind: Kind,
    /// Only these names (empty: every object).
    pub names: Vec<String>,
    /// Namespace (empty: all).
    pub namespace: String,
    /// `-l`, as kubectl writes it.
    pub label_selector: String,
    /// `--field-selector`.
    pub field_selector: FieldSelector,
}

impl WatchTarget {
    /// The single kind (and names) a watch may follow; kubectl refuses several kinds.
    pub fn from_targets(
        targets: &Targets,
        namespace: String,
        label_selector: String,
        field_selector: FieldSelector,
    ) -> anyhow::Result<Self> {
        let (kind, names) = match targets {
            Targets::Kinds { kinds, names } if kinds.len() == 1 => (kinds[0], names.clone()),
            Targets::Kinds { kinds, .. } => bail!(
                "watch is only supported on individual resources and resource collections, but {} resources were found",
                kinds.len()
            ),
            Targets::Named(named) => {
                let kind = named[0].0;
                if named.iter().any(|(k, _)| *k != kind) {
                    bail!(
                        "watch is only supported on individual resources and resource collections, but {} resources were found",
                        named.len()
                    );
                }
                (kind, named.iter().map(|(_, n)| n.clone()).collect())
            }
        };
        field_selector.check(kind)?;
        Ok(WatchTarget {
            kind,
            names,
            namespace,
            label_selector,
            field_selector,
        })
    }

    /// Whether an object is one the watch shows.
    fn selects(&self, object: &Object, labels: &berth_proto::model::LabelSelector) -> bool {
        let meta = object.meta();
        (self.names.is_empty() || self.names.contains(&meta.name))
            && labels.matches(&meta.labels)
            && self.field_selector.matches(object)
    }
}

/// Runs `get` with `--watch` or `--watch-only`.
pub async fn run(args: &GetArgs, target: WatchTarget, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let labels = berth_proto::selector::parse(&target.label_selector)?;
    let mut client = ctx.connect().await?;
    let (mut objects, watch) = client
        .list_and_watch(target.kind, &target.namespace, &target.label_selector)
        .await?;
    objects.retain(|o| target.selects(o, &labels));
    if let Some(missing) = target
        .names
        .iter()
        .find(|n| !objects.iter().any(|o| &o.meta().name == *n))
    {
        // As `get NAME`: a name that does not exist is an error before anything is watched.
        let kind = target.kind;
        bail!(
            "{} {missing:?} not found",
            crate::output::kind_display(kind)
        );
    }
    if target.kind == Kind::Event {
        get::sort_events(&mut objects);
    } else {
        sort_objects(&mut objects);
    }
    let mut printer = Printer::for_watch(args, target.kind);
    let mut shown: HashSet<(String, String)> = objects.iter().map(key).collect();
    if !args.watch_only {
        let now = SystemTime::now();
        let text = printer.print(
            target.kind,
            &objects
                .iter()
                .map(|o| (WatchEventType::Added, o.clone()))
                .collect::<Vec<_>>(),
            now,
        )?;
        ctx.print(&text)?;
    }
    tokio::select! {
        result = follow(watch, &target, &labels, &mut printer, &mut shown, ctx) => result,
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

fn key(object: &Object) -> (String, String) {
    let meta = object.meta();
    (meta.namespace.clone(), meta.name.clone())
}

/// Prints each change of the watch until it ends.
async fn follow(
    mut watch: Watch,
    target: &WatchTarget,
    labels: &berth_proto::model::LabelSelector,
    printer: &mut Printer,
    shown: &mut HashSet<(String, String)>,
    ctx: &mut Context<'_>,
) -> anyhow::Result<()> {
    while let Some(event) = watch.next().await {
        let (kind, object) = event?;
        let Some(kind) = visible_change(kind, &object, target.selects(&object, labels), shown)
        else {
            continue;
        };
        let text = printer.print(target.kind, &[(kind, object)], SystemTime::now())?;
        ctx.print(&text)?;
    }
    bail!("the server ended the watch")
}

/// How a change shows in a watch filtered on the client: as itself while the object is
/// selected, as `Deleted` once when it stops being selected (as a server-side selector
/// reports it), not at all otherwise. Keeps `shown` up to date.
pub fn visible_change(
    kind: WatchEventType,
    object: &Object,
    selected: bool,
    shown: &mut HashSet<(String, String)>,
) -> Option<WatchEventType> {
    let key = key(object);
    match (kind, selected) {
        (WatchEventType::Deleted, _) => shown.remove(&key).then_some(WatchEventType::Deleted),
        (_, true) => {
            if shown.insert(key) {
                Some(WatchEventType::Added)
            } else {
                Some(WatchEventType::Modified)
            }
        }
        (_, false) => shown.remove(&key).then_some(WatchEventType::Deleted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::PodBuilder;

    fn get_args(argv: &[&str]) -> GetArgs {
        let cli = <crate::Cli as clap::Parser>::try_parse_from(argv).expect("valid flags");
        match cli.command {
            crate::Command::Get(args) => args,
            other => panic!("not get: {other:?}"),
        }
    }

    #[test]
    fn watch_printers_print_the_header_once_and_separate_documents() {
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000);
        let pod = |name: &str| Object::Pod(PodBuilder::new(name).created(1_000).build());
        use WatchEventType::{Added, Deleted};
        // (flags, batches printed one after the other, the text of each)
        let cases: &[(&[&str], &[&[WatchEventType]], &[&str])] = &[
            (
                &["berth", "get", "pods", "-w"],
                &[&[], &[Added], &[Deleted]],
                &[
                    "",
                    "NAME   READY   STATUS    RESTARTS   AGE\np0     0/0     Pending   0          0s\n",
                    "p0    0/0   Pending   0     0s\n",
                ],
            ),
            (
                &["berth", "get", "pods", "-w", "--output-watch-events", "--no-headers"],
                &[&[Added, Added], &[Deleted]],
                &[
                    "ADDED   p0    0/0   Pending   0     0s\nADDED   p1    0/0   Pending   0     0s\n",
                    "DELETED   p0    0/0   Pending   0     0s\n",
                ],
            ),
            (
                &["berth", "get", "pods", "-w", "-o", "jsonpath={.metadata.name}{\"\\n\"}"],
                &[&[Added, Added], &[Deleted]],
                &["p0\np1\n", "p0\n"],
            ),
            (
                &["berth", "get", "pods", "-w", "-o", "custom-columns=POD:.metadata.name,NS:metadata.namespace"],
                &[&[Added], &[Deleted]],
                &["POD   NS\np0    default\n", "p0    default\n"],
            ),
            (
                &["berth", "get", "pods", "-w", "-o", "name"],
                &[&[Added], &[Deleted]],
                &["pod/p0\n", "pod/p0\n"],
            ),
            (
                &["berth", "get", "pods", "-w", "-o", "yaml", "--output-watch-events"],
                &[&[Added], &[Deleted]],
                // Keys sorted, as kubectl's YAML printer sorts them.
                &["object:\n", "---\nobject:\n"],
            ),
        ];
        for (argv, batches, want) in cases {
            let args = get_args(argv);
            let mut printer = Printer::for_watch(&args, Kind::Pod);
            for (batch, want) in batches.iter().zip(*want) {
                let items: Vec<_> = batch
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (*e, pod(&format!("p{i}"))))
                    .collect();
                let got = printer.print(Kind::Pod, &items, now).expect("printed");
                assert!(
                    got.starts_with(want),
                    "{argv:?}: {got:?} should start with {want:?}"
                );
                if want.ends_with(":\n") {
                    let event = items[0].0.as_str();
                    assert!(got.ends_with(&format!("type: {event}\n")), "{got:?}");
                } else {
                    assert_eq!(&got, want, "{argv:?}");
                }
            }
        }
    }

    #[test]
    fn client_side_selection_reports_what_a_server_selector_would() {
        use WatchEventType::{Added, Deleted, Modified};
        let pod = Object::Pod(PodBuilder::new("web").build());
        // (event, selected now, shown before) -> (printed as, shown after)
        let cases = [
            (Added, true, false, Some(Added), true),
            (Modified, true, true, Some(Modified), true),
            (Modified, true, false, Some(Added), true),
            (Modified, false, true, Some(Deleted), false),
            (Modified, false, false, None, false),
            (Deleted, true, true, Some(Deleted), false),
            (Deleted, false, false, None, false),
            (Added, false, false, None, false),
        ];
        for (event, selected, before, want, after) in cases {
            let mut shown = HashSet::new();
            if before {
                shown.insert(key(&pod));
            }
            let got = visible_change(event, &pod, selected, &mut shown);
            let row = (event, selected, before);
            assert_eq!(got, want, "{row:?}");
            assert_eq!(shown.contains(&key(&pod)), after, "{row:?}");
        }
    }
}
