//! `berth get -w` / `--watch` / `--watch-only`: the objects as `get` prints them, then one
//! line (or document) per change, as kubectl prints a watch: the header once (with the first
//! row printed), each later row aligned on its own, a deleted object printed once more, and
//! an object that stops matching `-l` or `--field-selector` printed once as it leaves. Ends on
//! Ctrl-C with exit code 0. A watch that breaks (its replica went away, or ended it) goes on
//! from the last resourceVersion it saw, on the next replica that answers, as kube's
//! reflector watches again: nothing is printed twice or missed; when that version is no
//! longer remembered (OUT_OF_RANGE), it lists again and prints what changed meanwhile.
//! On etcd the objects one transaction writes share its revision, and a watch may break
//! between them: it then goes on from the revision before, skipping the ones it had
//! ([`ResumePoint`]).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use anyhow::bail;
use berth_proto::model::{Kind, Object};

use super::fields::FieldSelector;
use super::get::{self, GetArgs, Printer};
use super::{sort_objects, Context, Targets};
use crate::client::{Client, Watch, WatchEventType};

/// First pause before a broken watch is started again; it doubles up to
/// [`RESUME_MAX_DELAY`], and starts over once an event arrives.
const RESUME_FIRST_DELAY: Duration = Duration::from_millis(100);
/// Longest pause between two starts of a broken watch.
const RESUME_MAX_DELAY: Duration = Duration::from_secs(2);
/// How many times in a row a watch is started again without an event in between before
/// `get -w` gives up (with the client's own retries, about a minute without a replica).
const RESUME_ATTEMPTS: u32 = 10;

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
    let (mut objects, version) = client
        .list_at(target.kind, &target.namespace, &target.label_selector)
        .await?;
    let watch = client
        .watch(target.kind, &target.namespace, &version)
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
    let mut shown: Shown = objects.iter().map(|o| (key(o), o.clone())).collect();
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
        result = follow(client, watch, version, &target, &labels, &mut printer, &mut shown, ctx) => result,
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

fn key(object: &Object) -> (String, String) {
    let meta = object.meta();
    (meta.namespace.clone(), meta.name.clone())
}

/// The objects a watch has shown and not yet shown gone, as last printed, by namespace and
/// name.
type Shown = HashMap<(String, String), Object>;

/// Where a broken watch goes on from: after the last resourceVersion seen, or, when that
/// version may be shared by objects not seen yet, from the one before it.
///
/// A watch from version V sends the changes after V. On sled every change has a revision of
/// its own; on etcd the objects one transaction writes (an apply of several documents, a
/// batch of bindings) share its revision, so a watch that broke after some of them would,
/// from that revision, never send the others. Going on from the revision before sends them
/// all again, and the ones already printed are skipped by name: an object changes at most
/// once in a revision.
#[derive(Debug)]
struct ResumePoint {
    /// The last version seen (or listed), as the server wrote it.
    version: String,
    /// That version as a number, when it is one and came from a change.
    revision: Option<u64>,
    /// The objects (namespace, name) whose change at `revision` was seen.
    seen_at: HashSet<(String, String)>,
}

impl ResumePoint {
    /// The point after a list at `version`: every change after it is new.
    fn listed(version: String) -> Self {
        ResumePoint {
            version,
            revision: None,
            seen_at: HashSet::new(),
        }
    }

    /// Takes a change in: false when it is one already seen (sent again after a resume).
    fn saw(&mut self, object: &Object) -> bool {
        let version = &object.meta().resource_version;
        let Ok(revision) = version.parse::<u64>() else {
            // Not a number: nothing can be shared, so resume right after it.
            self.version.clone_from(version);
            self.revision = None;
            self.seen_at.clear();
            return true;
        };
        match self.revision {
            Some(last) if revision == last => self.seen_at.insert(key(object)),
            Some(last) if revision < last => true,
            _ => {
                self.version.clone_from(version);
                self.revision = Some(revision);
                self.seen_at.clear();
                self.seen_at.insert(key(object));
                true
            }
        }
    }

    /// The version to watch from.
    fn from(&self) -> String {
        match self.revision {
            Some(revision) if revision > 0 => (revision - 1).to_string(),
            _ => self.version.clone(),
        }
    }
}

/// Prints each change of the watch; when the watch breaks, starts it again from the last
/// version seen (the client moves to another replica when its own went away), and when
/// that version has expired, lists again and prints the difference.
#[allow(clippy::too_many_arguments)]
async fn follow(
    mut client: Client,
    mut watch: Watch,
    version: String,
    target: &WatchTarget,
    labels: &berth_proto::model::LabelSelector,
    printer: &mut Printer,
    shown: &mut Shown,
    ctx: &mut Context<'_>,
) -> anyhow::Result<()> {
    let mut delay = RESUME_FIRST_DELAY;
    let mut attempts = 0;
    let mut resume = ResumePoint::listed(version);
    loop {
        // Whether the version seen last is no longer remembered: list again first.
        let mut expired = false;
        match watch.next().await {
            Some(Ok((kind, object))) => {
                delay = RESUME_FIRST_DELAY;
                attempts = 0;
                // Every change moves the version on, shown or not.
                if !resume.saw(&object) {
                    continue;
                }
                let selected = target.selects(&object, labels);
                if let Some(kind) = visible_change(kind, &object, selected, shown) {
                    let text = printer.print(target.kind, &[(kind, object)], SystemTime::now())?;
                    ctx.print(&text)?;
                }
                continue;
            }
            Some(Err(e)) if e.is_expired() => expired = true,
            Some(Err(e)) if !e.breaks_watch() => return Err(e.into()),
            Some(Err(e)) => {
                tracing::debug!(error = %e, resource_version = %resume.version, "the watch broke; watching again");
            }
            None => {
                tracing::debug!(resource_version = %resume.version, "the server ended the watch; watching again");
            }
        }
        watch = loop {
            attempts += 1;
            if attempts > RESUME_ATTEMPTS {
                bail!("the watch kept breaking: gave up after {RESUME_ATTEMPTS} attempts to watch again");
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(RESUME_MAX_DELAY);
            if expired {
                // Too old for the replica's memory: list again (kube's reflector does), and
                // print what the list says changed since the objects were shown.
                let (objects, listed) = match client
                    .list_at(target.kind, &target.namespace, &target.label_selector)
                    .await
                {
                    Ok(listed) => listed,
                    Err(e) if e.breaks_watch() => continue,
                    Err(e) => return Err(e.into()),
                };
                let selected = objects
                    .into_iter()
                    .filter(|o| target.selects(o, labels))
                    .collect();
                let changes = relist_changes(selected, shown);
                ctx.print(&printer.print(target.kind, &changes, SystemTime::now())?)?;
                resume = ResumePoint::listed(listed);
                expired = false;
            }
            match client
                .watch(target.kind, &target.namespace, &resume.from())
                .await
            {
                Ok(watch) => break watch,
                Err(e) if e.is_expired() => expired = true,
                Err(e) if e.breaks_watch() => {
                    tracing::debug!(error = %e, "no replica answers the watch yet");
                }
                Err(e) => return Err(e.into()),
            }
        };
    }
}

/// How a change shows in a watch filtered on the client: as itself while the object is
/// selected, as `Deleted` once when it stops being selected (as a server-side selector
/// reports it), not at all otherwise. Keeps `shown` up to date.
pub fn visible_change(
    kind: WatchEventType,
    object: &Object,
    selected: bool,
    shown: &mut Shown,
) -> Option<WatchEventType> {
    let key = key(object);
    match (kind, selected) {
        (WatchEventType::Deleted, _) => shown.remove(&key).map(|_| WatchEventType::Deleted),
        (_, true) => match shown.insert(key, object.clone()) {
            None => Some(WatchEventType::Added),
            Some(_) => Some(WatchEventType::Modified),
        },
        (_, false) => shown.remove(&key).map(|_| WatchEventType::Deleted),
    }
}

/// What a list taken after a watch broke says happened to the objects shown: an object not
/// shown before is `Added`, one at another resourceVersion `Modified`, one at the same
/// version nothing, and one shown but no longer listed `Deleted`, printed as it was last
/// shown (sorted by namespace and name). Keeps `shown` up to date.
pub fn relist_changes(listed: Vec<Object>, shown: &mut Shown) -> Vec<(WatchEventType, Object)> {
    let mut changes = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for object in listed {
        let key = key(&object);
        seen.insert(key.clone());
        let kind = match shown.get(&key) {
            None => WatchEventType::Added,
            Some(old) if old.meta().resource_version != object.meta().resource_version => {
                WatchEventType::Modified
            }
            Some(_) => continue,
        };
        shown.insert(key, object.clone());
        changes.push((kind, object));
    }
    let mut gone: Vec<(String, String)> = shown
        .keys()
        .filter(|k| !seen.contains(*k))
        .cloned()
        .collect();
    gone.sort();
    for key in gone {
        if let Some(object) = shown.remove(&key) {
            changes.push((WatchEventType::Deleted, object));
        }
    }
    changes
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
    fn a_resumed_watch_goes_on_from_before_a_shared_revision_and_skips_what_it_had() {
        let pod = |name: &str, version: &str| {
            let mut pod = PodBuilder::new(name).build();
            pod.metadata.resource_version = version.into();
            Object::Pod(Box::new(pod))
        };
        // (changes taken in, in order: (name, version, new?), then where to resume from)
        let cases: &[(&str, &str, &[(&str, &str, bool)], &str)] = &[
            ("right after a list", "10", &[], "10"),
            ("after one change", "10", &[("a", "11", true)], "10"),
            (
                "two objects of one transaction, both seen",
                "10",
                &[("a", "12", true), ("b", "12", true)],
                "11",
            ),
            (
                "after the resume: the one seen is skipped, the other and later ones are new",
                "10",
                &[
                    ("a", "12", true),
                    ("a", "12", false),
                    ("b", "12", true),
                    ("a", "13", true),
                ],
                "12",
            ),
            (
                "an older version (not sent by a server) is shown, and moves nothing",
                "10",
                &[("a", "12", true), ("b", "11", true)],
                "11",
            ),
            (
                "a version that is not a number resumes right after it",
                "10",
                &[("a", "12", true), ("b", "x", true)],
                "x",
            ),
        ];
        for (name, listed, changes, from) in cases {
            let mut resume = ResumePoint::listed(listed.to_string());
            for (pod_name, version, new) in *changes {
                assert_eq!(
                    resume.saw(&pod(pod_name, version)),
                    *new,
                    "{name}: {pod_name} at {version}"
                );
            }
            assert_eq!(resume.from(), *from, "{name}");
        }
    }

    #[test]
    fn watch_printers_print_the_header_once_and_separate_documents() {
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000);
        let pod = |name: &str| Object::Pod(Box::new(PodBuilder::new(name).created(1_000).build()));
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
    fn a_list_after_an_expired_watch_prints_what_changed_since_last_shown() {
        use WatchEventType::{Added, Deleted, Modified};
        let pod = |name: &str, version: &str| {
            let mut pod = PodBuilder::new(name).build();
            pod.metadata.resource_version = version.to_string();
            Object::Pod(Box::new(pod))
        };
        // (shown before, listed now, printed, shown after): names with their versions
        type Row<'a> = (&'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)]);
        let cases: &[(Row, &[(WatchEventType, &str, &str)], &[(&str, &str)])] = &[
            // Nothing changed: nothing printed.
            ((&[("a", "5")], &[("a", "5")]), &[], &[("a", "5")]),
            // New, changed and gone; the gone one printed as last shown.
            (
                (
                    &[("a", "5"), ("b", "6"), ("c", "7")],
                    &[("a", "9"), ("c", "7"), ("d", "8")],
                ),
                &[(Modified, "a", "9"), (Added, "d", "8"), (Deleted, "b", "6")],
                &[("a", "9"), ("c", "7"), ("d", "8")],
            ),
            // Everything gone, in name order.
            (
                (&[("z", "2"), ("m", "3")], &[]),
                &[(Deleted, "m", "3"), (Deleted, "z", "2")],
                &[],
            ),
            // Nothing shown before: all Added, in the list's order.
            (
                (&[], &[("b", "4"), ("a", "3")]),
                &[(Added, "b", "4"), (Added, "a", "3")],
                &[("b", "4"), ("a", "3")],
            ),
        ];
        let names = |objects: Vec<&Object>| -> Vec<(String, String)> {
            let mut names: Vec<_> = objects
                .into_iter()
                .map(|o| (o.meta().name.clone(), o.meta().resource_version.clone()))
                .collect();
            names.sort();
            names
        };
        for ((before, listed), want, after) in cases {
            let mut shown: Shown = before
                .iter()
                .map(|(n, v)| (key(&pod(n, v)), pod(n, v)))
                .collect();
            let listed = listed.iter().map(|(n, v)| pod(n, v)).collect();
            let got: Vec<(WatchEventType, String, String)> = relist_changes(listed, &mut shown)
                .into_iter()
                .map(|(e, o)| (e, o.meta().name.clone(), o.meta().resource_version.clone()))
                .collect();
            let want: Vec<_> = want
                .iter()
                .map(|(e, n, v)| (*e, n.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "{before:?} then {after:?}");
            let mut after: Vec<_> = after
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            after.sort();
            assert_eq!(names(shown.values().collect()), after, "{before:?}");
        }
    }

    #[test]
    fn client_side_selection_reports_what_a_server_selector_would() {
        use WatchEventType::{Added, Deleted, Modified};
        let pod = Object::Pod(Box::new(PodBuilder::new("web").build()));
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
            let mut shown = Shown::new();
            if before {
                shown.insert(key(&pod), pod.clone());
            }
            let got = visible_change(event, &pod, selected, &mut shown);
            let row = (event, selected, before);
            assert_eq!(got, want, "{row:?}");
            assert_eq!(shown.contains_key(&key(&pod)), after, "{row:?}");
        }
    }
}
