//! The client verbs, one module each, and what they share: the [`Context`] (flags, output
//! streams, the connection), resource arguments as kubectl reads them, and error reporting.

pub mod api_resources;
pub mod apply;
pub mod completion;
pub mod cordon;
pub mod create;
pub mod delete;
pub mod describe;
pub mod diff;
pub mod drain;
pub mod edit;
pub mod evict;
pub mod fields;
pub mod get;
pub mod job;
pub mod label;
pub mod logs;
pub mod rollout;
pub mod scale;
pub mod taint;
pub mod top;
pub mod version;
pub mod wait;
pub mod watch;

#[cfg(test)]
mod tests;

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::bail;
use berth_proto::model::{Kind, Object, DEFAULT_NAMESPACE};

use crate::client::{Client, ClientError};
use crate::{config, Command, GlobalArgs};

/// How many times a read-modify-write verb (label, taint, cordon) retries after a conflict.
const CONFLICT_RETRIES: usize = 5;

/// Where a verb writes: its normal output and its diagnostics.
pub struct Io {
    /// Normal output (stdout).
    pub out: Box<dyn Write + Send>,
    /// Diagnostics and errors (stderr).
    pub err: Box<dyn Write + Send>,
    /// Whether `out` is a terminal (progress is then drawn in place).
    pub terminal: bool,
}

impl Io {
    /// The process's standard output and error.
    pub fn stdio() -> Self {
        use std::io::IsTerminal;
        Io {
            out: Box::new(std::io::stdout()),
            err: Box::new(std::io::stderr()),
            terminal: std::io::stdout().is_terminal(),
        }
    }

    /// Streams that write into memory, for running the CLI inside a program or a test:
    /// returns them with what the output and the diagnostics receive.
    pub fn captured() -> (Self, Captured, Captured) {
        let (out, err) = (Captured::default(), Captured::default());
        let io = Io {
            out: Box::new(out.clone()),
            err: Box::new(err.clone()),
            terminal: false,
        };
        (io, out, err)
    }
}

/// The bytes written to one stream of [`Io::captured`].
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// What was written so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut buffer = self.0.lock().unwrap_or_else(|e| e.into_inner());
        buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What every verb gets: the global flags and the output streams.
pub struct Context<'a> {
    global: GlobalArgs,
    /// Output streams.
    pub io: &'a mut Io,
}

impl<'a> Context<'a> {
    /// A context for one command.
    pub fn new(global: GlobalArgs, io: &'a mut Io) -> Self {
        Context { global, io }
    }

    /// The namespace from `-n`, or `default`.
    pub fn namespace(&self) -> &str {
        self.global
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .unwrap_or(DEFAULT_NAMESPACE)
    }

    /// The namespace from `-n`, if it was given.
    pub fn explicit_namespace(&self) -> Option<&str> {
        self.global.namespace.as_deref().filter(|ns| !ns.is_empty())
    }

    /// Connects to the scheduler named by the flags, environment or config file.
    pub async fn connect(&self) -> anyhow::Result<Client> {
        Ok(Client::connect_to(&self.target()?).await?)
    }

    /// Connects and returns the generated API client, for calls the [`Client`] does not
    /// wrap (Evict).
    pub async fn connect_api(&self) -> anyhow::Result<crate::client::Api> {
        crate::client::connect_to(&self.target()?).await
    }

    /// The server, token and CA to use, from the flags, the environment and the config file.
    pub fn target(&self) -> anyhow::Result<config::Target> {
        Ok(config::resolve_target(
            self.global.server.as_deref(),
            self.global.token.as_deref(),
            self.global.ca.as_deref(),
        )?)
    }

    /// Whether the normal output is a terminal.
    pub fn io_is_terminal(&self) -> bool {
        self.io.terminal
    }

    /// Writes `text` to the normal output.
    pub fn print(&mut self, text: &str) -> std::io::Result<()> {
        self.io.out.write_all(text.as_bytes())?;
        self.io.out.flush()
    }

    /// Writes one `error: ...` line per line of `message` to the diagnostics stream, for a
    /// failure that does not stop the verb (one of several objects).
    pub fn error_line(&mut self, message: &str) -> std::io::Result<()> {
        for line in message.lines() {
            writeln!(self.io.err, "error: {line}")?;
        }
        self.io.err.flush()
    }

    /// Writes a note (not an error) to the diagnostics stream.
    pub fn note(&mut self, message: &str) -> std::io::Result<()> {
        writeln!(self.io.err, "{message}")?;
        self.io.err.flush()
    }

    /// One object's outcome in a verb over several objects: its message on the output, or
    /// its error as an `error:` line, counted in `failed`; the verb goes on either way.
    pub fn report<E: std::fmt::Display>(
        &mut self,
        outcome: Result<String, E>,
        failed: &mut usize,
    ) -> std::io::Result<()> {
        match outcome {
            Ok(message) => self.print(&format!("{message}\n")),
            Err(e) => {
                *failed += 1;
                self.error_line(&e.to_string())
            }
        }
    }

    /// Prints the failures of a verb over several objects, one `error:` line each, and
    /// fails with [`Reported`] when there was any.
    pub fn finish(&mut self, failures: &[String]) -> anyhow::Result<()> {
        for failure in failures {
            self.error_line(failure)?;
        }
        Reported::check(failures.len())
    }
}

/// Marks a failure whose errors were already printed (some objects of a verb failed): the
/// exit code is 1 and nothing more is printed.
#[derive(Debug, thiserror::Error)]
#[error("{failed} of the requested operations failed")]
pub struct Reported {
    /// How many operations failed.
    pub failed: usize,
}

impl Reported {
    /// Ok when nothing failed, else the [`Reported`] error for `failed` operations.
    pub fn check(failed: usize) -> anyhow::Result<()> {
        if failed > 0 {
            return Err(Reported { failed }.into());
        }
        Ok(())
    }
}

/// Runs a client verb.
pub async fn run(command: Command, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    match command {
        Command::Apply(args) => apply::run(args, ctx).await,
        Command::Get(args) => get::run(args, ctx).await,
        Command::Describe(args) => describe::run(args, ctx).await,
        Command::Delete(args) => delete::run(args, ctx).await,
        Command::Label(args) => label::run(args, ctx).await,
        Command::Taint(args) => taint::run(args, ctx).await,
        Command::Cordon(args) => cordon::run(args, true, ctx).await,
        Command::Uncordon(args) => cordon::run(args, false, ctx).await,
        Command::Drain(args) => drain::run(args, ctx).await,
        Command::Evict(args) => evict::run(args, ctx).await,
        Command::Scale(args) => scale::run(args, ctx).await,
        Command::Logs(args) => logs::run(args, ctx).await,
        Command::Top(args) => top::run(args, ctx).await,
        Command::Rollout(args) => rollout::run(args, ctx).await,
        Command::Wait(args) => wait::run(args, ctx).await,
        Command::Version(args) => version::run(args, ctx).await,
        Command::Create(args) => create::run(args, ctx).await,
        Command::Diff(args) => diff::run(args, ctx).await,
        Command::Edit(args) => edit::run(args, ctx).await,
        Command::ApiResources(args) => api_resources::run(args, ctx).await,
        Command::Completion(args) => completion::run(args, ctx).await,
        Command::Dev(_) => bail!("`berth dev` is not a client verb"),
        Command::Bench(_) => bail!("`berth bench` is not a client verb"),
        Command::Sim(_) => bail!("`berth sim` is not a client verb"),
        Command::Lab(_) => bail!("`berth lab` is not a client verb"),
    }
}

/// Prints an error as one `error: ...` line per line of its message, and returns exit code 1.
/// A closed stdout (`berth get pods | head`) ends quietly.
pub fn report(err: &anyhow::Error, io: &mut Io) -> ExitCode {
    let broken_pipe = err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    if let Some(exit) = err.downcast_ref::<Exit>() {
        report(&exit.error, io);
        return ExitCode::from(exit.code);
    }
    if err.downcast_ref::<Reported>().is_none() {
        for line in render_error(err).lines() {
            let _ = writeln!(io.err, "error: {line}");
        }
        let _ = io.err.flush();
    }
    ExitCode::FAILURE
}

/// A failure with its own exit code (`diff` exits 1 for "differences found" and 2 for an
/// error): the error is printed as any other, then the process exits with `code`.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Exit {
    /// The exit code.
    pub code: u8,
    /// What failed.
    pub error: anyhow::Error,
}

/// An error and its causes on one line (`outer: cause`), leaving out a cause whose text the
/// message already includes (thiserror messages often embed their source).
fn render_error(err: &anyhow::Error) -> String {
    let mut message = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
    }
    message
}

/// Parses a resource type as kubectl accepts it (`pods`, `po`, `node`, `pc`,
/// `priorityclasses.scheduling.k8s.io`).
pub fn parse_kind(text: &str) -> anyhow::Result<Kind> {
    let kind = Kind::from_cli(text).or_else(|| {
        let (resource, group) = text.split_once('.')?;
        let kind = Kind::from_cli(resource)?;
        let expected_group = kind.api_version().rsplit_once('/').map_or("", |(g, _)| g);
        (group == expected_group).then_some(kind)
    });
    match kind {
        Some(kind) => Ok(kind),
        None => bail!("the server doesn't have a resource type {text:?}"),
    }
}

/// Which objects a verb's positional arguments name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// `pods`, `pods,nodes`, `pods web db`: kinds, and names (none means all).
    Kinds {
        /// The kinds, in the order given.
        kinds: Vec<Kind>,
        /// Names; empty for "every object of the kinds".
        names: Vec<String>,
    },
    /// `pod/web node/n1`: each argument a kind and a name.
    Named(Vec<(Kind, String)>),
}

/// The kinds of kube's `all` category (`get all`) that Berth has, in kubectl's order
/// (kube's also holds services, statefulsets, horizontalpodautoscalers and cronjobs).
pub const ALL_CATEGORY: [Kind; 5] = [
    Kind::Pod,
    Kind::DaemonSet,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::Job,
];

/// Reads kubectl-style resource arguments: `TYPE[,TYPE...] [NAME...]` or `TYPE/NAME...`.
pub fn parse_targets(args: &[String]) -> anyhow::Result<Targets> {
    let Some(first) = args.first() else {
        bail!("you must specify the type of resource");
    };
    if first.contains('/') {
        let mut named = Vec::new();
        for arg in args {
            let Some((kind, name)) = arg.split_once('/') else {
                bail!("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'berth get resource/<resource_name>' instead of 'berth get resource resource/<resource_name>')");
            };
            if name.is_empty() {
                bail!("arguments in resource/name form must have a single resource and name");
            }
            named.push((parse_kind(kind)?, name.to_string()));
        }
        return Ok(Targets::Named(named));
    }
    let mut kinds = Vec::new();
    for text in first.split(',').filter(|k| !k.is_empty()) {
        let named = if text.eq_ignore_ascii_case("all") {
            ALL_CATEGORY.to_vec()
        } else {
            vec![parse_kind(text)?]
        };
        for kind in named {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    let names = args[1..].to_vec();
    if let Some(bad) = names.iter().find(|n| n.contains('/')) {
        bail!("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'berth get resource/<resource_name>' instead of 'berth get resource {bad}')");
    }
    Ok(Targets::Kinds { kinds, names })
}

/// The objects of one kind that a verb works on: those named (in `namespace`), or those
/// listed. Used by verbs that need each object once by kind and name.
pub fn named_objects(targets: &Targets) -> Vec<(Kind, String)> {
    match targets {
        Targets::Named(named) => named.clone(),
        Targets::Kinds { kinds, names } => kinds
            .iter()
            .flat_map(|k| names.iter().map(move |n| (*k, n.clone())))
            .collect(),
    }
}

/// [`named_objects`] for the verbs that change objects: a kind without names is refused,
/// as kubectl does.
pub fn named_objects_required(targets: &Targets) -> anyhow::Result<Vec<(Kind, String)>> {
    if let Targets::Kinds { names, .. } = targets {
        if names.is_empty() {
            bail!("resource(s) were provided, but no name was specified");
        }
    }
    Ok(named_objects(targets))
}

/// Sorts objects by namespace, then name, for stable output.
pub fn sort_objects(objects: &mut [Object]) {
    objects.sort_by(|a, b| {
        (&a.meta().namespace, &a.meta().name).cmp(&(&b.meta().namespace, &b.meta().name))
    });
}

/// `pod/web`, as kubectl prints an object in `-o name` and verb messages.
pub fn object_ref(kind: Kind, name: &str) -> String {
    format!("{}/{name}", crate::output::kind_display(kind))
}

/// What a read-modify-write change decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update {
    /// Write the modified object, then print the message.
    Write(String),
    /// Nothing to write; print the message.
    Unchanged(String),
}

/// Reads an object, lets `change` modify it, and applies it with its resource version as a
/// precondition; on a conflict (someone else wrote it meanwhile) starts again, a few times.
/// Returns the message `change` chose.
pub async fn read_modify_write<F>(
    client: &mut Client,
    kind: Kind,
    namespace: &str,
    name: &str,
    mut change: F,
) -> anyhow::Result<String>
where
    F: FnMut(&mut Object) -> anyhow::Result<Update>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut object = client.get(kind, namespace, name).await?;
        let message = match change(&mut object)? {
            Update::Unchanged(message) => return Ok(message),
            Update::Write(message) => message,
        };
        match client.apply(std::slice::from_ref(&object), false).await {
            Ok(_) => return Ok(message),
            Err(e) if e.is_conflict() && attempt < CONFLICT_RETRIES => {
                tracing::debug!(%name, attempt, error = %e, "conflict, retrying");
                tokio::time::sleep(Duration::from_millis(20 * attempt as u64)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Runs a read-modify-write verb over several objects: prints each message, prints each
/// failure as an `error:` line and goes on with the next object, and fails at the end if any
/// object failed.
pub async fn update_each<F>(
    ctx: &mut Context<'_>,
    objects: Vec<(Kind, String)>,
    mut change: F,
) -> anyhow::Result<()>
where
    F: FnMut(&mut Object) -> anyhow::Result<Update>,
{
    let mut client = ctx.connect().await?;
    let namespace = ctx.namespace().to_string();
    let mut failed = 0;
    for (kind, name) in objects {
        let outcome = read_modify_write(&mut client, kind, &namespace, &name, &mut change).await;
        ctx.report(outcome, &mut failed)?;
    }
    Reported::check(failed)
}

/// Whether an error is the server's "not found".
pub fn is_not_found(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ClientError>()
        .is_some_and(ClientError::is_not_found)
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn resource_arguments_like_kubectl() {
        struct Case {
            name: &'static str,
            args: &'static [&'static str],
            want: Result<Targets, &'static str>,
        }
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cases = [
            Case {
                name: "kind only",
                args: &["pods"],
                want: Ok(Targets::Kinds {
                    kinds: vec![Kind::Pod],
                    names: vec![],
                }),
            },
            Case {
                name: "kinds and names",
                args: &["po,no", "a", "b"],
                want: Ok(Targets::Kinds {
                    kinds: vec![Kind::Pod, Kind::Node],
                    names: s(&["a", "b"]),
                }),
            },
            Case {
                name: "resource/name form",
                args: &["pod/web", "priorityclasses.scheduling.k8s.io/high"],
                want: Ok(Targets::Named(vec![
                    (Kind::Pod, "web".into()),
                    (Kind::PriorityClass, "high".into()),
                ])),
            },
            Case {
                name: "the all category, a kind named twice once",
                args: &["all,pods,jobs"],
                want: Ok(Targets::Kinds {
                    kinds: ALL_CATEGORY.to_vec(),
                    names: vec![],
                }),
            },
            Case {
                name: "unknown type",
                args: &["services"],
                want: Err("the server doesn't have a resource type \"services\""),
            },
            Case {
                name: "wrong group",
                args: &["pods.apps"],
                want: Err("the server doesn't have a resource type \"pods.apps\""),
            },
            Case {
                name: "mixed forms",
                args: &["pod/web", "db"],
                want: Err("there is no need to specify a resource type as a separate argument"),
            },
            Case {
                name: "nothing",
                args: &[],
                want: Err("you must specify the type of resource"),
            },
        ];
        for case in cases {
            let got = parse_targets(&s(case.args));
            match (got, case.want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{}", case.name),
                (Err(got), Err(want)) => {
                    assert!(got.to_string().starts_with(want), "{}: {got}", case.name)
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn modifying_verbs_need_names() {
        let kinds_only = Targets::Kinds {
            kinds: vec![Kind::Node],
            names: vec![],
        };
        let err = named_objects_required(&kinds_only).expect_err("no names");
        assert_eq!(
            err.to_string(),
            "resource(s) were provided, but no name was specified"
        );
        let named = Targets::Kinds {
            kinds: vec![Kind::Node, Kind::Pod],
            names: vec!["a".into()],
        };
        assert_eq!(
            named_objects_required(&named).expect("named"),
            vec![(Kind::Node, "a".to_string()), (Kind::Pod, "a".to_string())]
        );
    }
}
