//! `berth diff -f PATH...`: what `apply` would change, as `kubectl diff` shows it. The
//! server runs the apply as a dry run (admission and validation, nothing stored) and
//! returns each object as it would store it; the live objects and those go into two
//! folders, `LIVE-*` and `MERGED-*`, one YAML file per object named
//! `group.version.Kind.namespace.name`, and `diff -u -N` (or `$KUBECTL_EXTERNAL_DIFF`)
//! compares the folders. Exit status: 0 no differences, 1 differences, more on an error.

use std::path::Path;
use std::process::Stdio;

use anyhow::{bail, Context as _};
use berth_proto::model::Object;

use crate::client::Client;
use clap::Args;

use super::{Context, Exit, Reported};
use crate::output::{render_objects, Format};

/// Flags of `berth diff`.
#[derive(Args, Debug, Clone)]
pub struct DiffArgs {
    /// Manifests, as `apply -f` takes them.
    #[arg(short = 'f', long = "filename", required = true, value_name = "PATH")]
    pub filenames: Vec<String>,
}

/// The environment variable naming another diff program (with its arguments), as kubectl
/// reads it.
pub const EXTERNAL_DIFF_ENV: &str = "KUBECTL_EXTERNAL_DIFF";

/// The file an object is written to: kubectl's `group.version.Kind.namespace.name` (`v1` for
/// the core group, no namespace part for cluster-scoped kinds' empty one).
pub fn file_name(object: &Object) -> String {
    let kind = object.kind();
    let version = kind.api_version().replace('/', ".");
    let meta = object.meta();
    [
        version.as_str(),
        kind.as_str(),
        meta.namespace.as_str(),
        meta.name.as_str(),
    ]
    .iter()
    .filter(|part| !part.is_empty())
    .copied()
    .collect::<Vec<_>>()
    .join(".")
}

/// Writes an object as YAML into `dir`.
fn write_object(dir: &Path, object: &Object) -> anyhow::Result<()> {
    let path = dir.join(file_name(object));
    std::fs::write(
        &path,
        render_objects(std::slice::from_ref(object), true, Format::Yaml),
    )
    .with_context(|| format!("writing {}", path.display()))
}

/// Runs `berth diff`: exit 1 when there are differences (the diff says so, nothing
/// more), 2 on an error.
pub async fn run(args: DiffArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    match diff(args, ctx).await {
        Ok(false) => Ok(()),
        Ok(true) => Err(Exit {
            code: 1,
            error: Reported { failed: 1 }.into(),
        }
        .into()),
        Err(error) => Err(Exit { code: 2, error }.into()),
    }
}

/// Shows the differences; whether there are any.
async fn diff(args: DiffArgs, ctx: &mut Context<'_>) -> anyhow::Result<bool> {
    let objects = super::apply::objects_from(&args.filenames, ctx)?;
    let mut client = ctx.connect().await?;
    let (live, merged) = live_and_merged(&mut client, &objects).await?;
    let live_dir = tempfile::Builder::new().prefix("LIVE-").tempdir()?;
    let merged_dir = tempfile::Builder::new().prefix("MERGED-").tempdir()?;
    for object in &live {
        write_object(live_dir.path(), object)?;
    }
    for object in &merged {
        write_object(merged_dir.path(), object)?;
    }
    match diff_program(live_dir.path(), merged_dir.path(), ctx)? {
        0 => Ok(false),
        1 => Ok(true),
        code => bail!("diff exited with status {code}"),
    }
}

/// How many times the live objects are read again when one changed during the dry run.
const CONSISTENCY_ATTEMPTS: usize = 5;

/// The live objects (those that exist) and the objects as the apply would store them, read
/// so that both describe the same moment: when a live object changes between its read and
/// the dry run (a controller writing its status), both are read again.
async fn live_and_merged(
    client: &mut Client,
    objects: &[Object],
) -> anyhow::Result<(Vec<Object>, Vec<Object>)> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut live = Vec::new();
        for object in objects {
            let meta = object.meta();
            match client.get(object.kind(), &meta.namespace, &meta.name).await {
                Ok(found) => live.push(found),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e.into()),
            }
        }
        let mut merged = Vec::new();
        let mut moved = false;
        for result in client.apply(objects, true).await? {
            let Some(mut object) = result.object else {
                bail!(
                    "the server did not return {} as it would store it",
                    result.name
                );
            };
            let current = live.iter().find(|l| {
                l.kind() == object.kind()
                    && l.meta().namespace == object.meta().namespace
                    && l.meta().name == object.meta().name
            });
            if let Some(current) = current {
                let version = &current.meta().resource_version;
                let seen = &object.meta().resource_version;
                if seen.is_empty() {
                    // A dry run assigns no version: show the one the write would replace.
                    object.meta_mut().resource_version = version.clone();
                } else if seen != version {
                    moved = true;
                }
            }
            merged.push(object);
        }
        if !moved || attempt >= CONSISTENCY_ATTEMPTS {
            return Ok((live, merged));
        }
    }
}

/// Runs the diff program over the two folders, its output to ours; returns its exit code.
fn diff_program(live: &Path, merged: &Path, ctx: &mut Context<'_>) -> anyhow::Result<i32> {
    let external = std::env::var(EXTERNAL_DIFF_ENV).unwrap_or_default();
    let mut words: Vec<String> = external.split_whitespace().map(String::from).collect();
    if words.is_empty() {
        words = vec!["diff".into(), "-u".into(), "-N".into()];
    }
    let program = words.remove(0);
    let output = std::process::Command::new(&program)
        .args(&words)
        .arg(live)
        .arg(merged)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {program}"))?;
    ctx.print(&String::from_utf8_lossy(&output.stdout))?;
    if !output.stderr.is_empty() {
        ctx.note(String::from_utf8_lossy(&output.stderr).trim_end())?;
    }
    // A program killed by a signal counts as failed.
    Ok(output.status.code().unwrap_or(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::Kind;

    #[test]
    fn files_are_named_as_kubectl_names_them() {
        let deployment = Object::from_json(
            Kind::Deployment,
            br#"{"metadata": {"name": "web", "namespace": "default"}}"#,
        )
        .expect("valid");
        assert_eq!(file_name(&deployment), "apps.v1.Deployment.default.web");
        let node =
            Object::from_json(Kind::Node, br#"{"metadata": {"name": "n1"}}"#).expect("valid");
        assert_eq!(file_name(&node), "v1.Node.n1");
    }
}
