//! `berth edit KIND/NAME...`: opens the objects as YAML in `$KUBE_EDITOR`, `$EDITOR` or
//! `vi`, then applies what was saved with the objects' resourceVersions as preconditions,
//! as `kubectl edit` does. An empty or unchanged file cancels (`Edit cancelled, no changes
//! made.`); a file that does not read or is refused as invalid is reopened with the error
//! as comments at its top; a conflict (someone changed an object meanwhile) fails and
//! keeps the edited copy in its temporary file.

use std::io::Write as _;
use std::path::Path;

use anyhow::{bail, Context as _};
use berth_proto::model::Object;
use clap::Args;

use super::{named_objects_required, object_ref, parse_targets, Context};
use crate::client::ClientError;
use crate::manifest::{self, LoadOptions};
use crate::output::{object_value, render_objects, Format};

/// Flags of `berth edit`.
#[derive(Args, Debug, Clone)]
pub struct EditArgs {
    /// What to edit: `TYPE NAME...` or `TYPE/NAME...`.
    #[arg(required = true, value_name = "TYPE [NAME]...")]
    pub resources: Vec<String>,
    /// Edit as JSON instead of YAML.
    #[arg(short = 'o', long, value_parser = ["yaml", "json"], default_value = "yaml", value_name = "FORMAT")]
    pub output: String,
}

/// The comment at the top of the file, as kubectl writes it.
const HEADER: &str =
    "# Please edit the object below. Lines beginning with a '#' will be ignored,\n\
# and an empty file will abort the edit. If an error occurs while saving this file will be\n\
# reopened with the relevant failures.\n#\n";

/// The editor to run: `$KUBE_EDITOR`, else `$EDITOR`, else `vi`.
pub fn editor() -> String {
    ["KUBE_EDITOR", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// The text without its comment lines (those starting with `#`).
fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The file's text: the header, the errors of the last save as comments, then the objects.
fn file_text(errors: &[String], body: &str) -> String {
    let mut text = HEADER.to_string();
    for error in errors {
        for line in error.lines() {
            text.push_str(&format!("# {line}\n"));
        }
        text.push_str("#\n");
    }
    text.push_str(body);
    text
}

/// Runs the editor on `path` through `sh -c`, as kubectl runs an editor command with
/// arguments; the editor has the terminal.
fn run_editor(editor: &str, path: &Path) -> anyhow::Result<()> {
    let quoted = format!("'{}'", path.display().to_string().replace('\'', r"'\''"));
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} {quoted}"))
        .status()
        .with_context(|| format!("running the editor {editor:?}"))?;
    if !status.success() {
        bail!("there was a problem with the editor {editor:?}");
    }
    Ok(())
}

/// What one save of the file amounts to.
enum Saved {
    /// Nothing to do.
    Cancelled,
    /// These objects changed.
    Changed(Vec<Object>),
    /// The file does not read, or names other objects; reopen with these errors.
    Invalid(Vec<String>),
}

/// Reads the saved text against the objects as they were opened.
fn read_saved(path: &Path, text: &str, originals: &[Object]) -> Saved {
    if text.trim().is_empty() {
        return Saved::Cancelled;
    }
    let loaded =
        match manifest::parse_str(&path.display().to_string(), text, LoadOptions::default()) {
            Ok(loaded) => loaded,
            Err(e) => return Saved::Invalid(vec![e.to_string()]),
        };
    let mut changed = Vec::new();
    for m in loaded.manifests {
        let edited = m.object;
        let key = |o: &Object| (o.kind(), o.meta().namespace.clone(), o.meta().name.clone());
        let Some(original) = originals.iter().find(|o| key(o) == key(&edited)) else {
            return Saved::Invalid(vec![format!(
                "{}: at least one of apiVersion, kind and name was changed",
                object_ref(edited.kind(), &edited.meta().name)
            )]);
        };
        if object_value(original) != object_value(&edited) {
            changed.push(edited);
        }
    }
    if changed.is_empty() {
        Saved::Cancelled
    } else {
        Saved::Changed(changed)
    }
}

/// Runs `berth edit`.
pub async fn run(args: EditArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let targets = named_objects_required(&parse_targets(&args.resources)?)?;
    let mut client = ctx.connect().await?;
    let namespace = ctx.namespace().to_string();
    let mut originals = Vec::with_capacity(targets.len());
    for (kind, name) in &targets {
        originals.push(client.get(*kind, &namespace, name).await?);
    }
    let format = if args.output == "json" {
        Format::Json
    } else {
        Format::Yaml
    };
    let body = render_objects(&originals, originals.len() == 1, format);
    let suffix = if format == Format::Json {
        ".json"
    } else {
        ".yaml"
    };
    let file = tempfile::Builder::new()
        .prefix("berth-edit-")
        .suffix(suffix)
        .tempfile()?;
    let path = file.into_temp_path();
    let editor = editor();
    let mut text = file_text(&[], &body);
    let mut last_invalid: Option<String> = None;
    loop {
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .with_context(|| format!("writing {}", path.display()))?;
        run_editor(&editor, &path)?;
        let saved = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let saved = without_comments(&saved);
        if last_invalid.as_deref() == Some(saved.as_str()) {
            let kept = keep(path)?;
            bail!(
                "Edit cancelled, no valid changes were saved.\nA copy of your changes has been stored to {kept:?}"
            );
        }
        let changed = match read_saved(&path, &saved, &originals) {
            Saved::Cancelled => {
                ctx.print("Edit cancelled, no changes made.\n")?;
                return Ok(());
            }
            Saved::Invalid(errors) => {
                text = file_text(&errors, &saved);
                last_invalid = Some(saved);
                continue;
            }
            Saved::Changed(changed) => changed,
        };
        match client.apply(&changed, false).await {
            Ok(_) => {
                let mut out = String::new();
                for object in &changed {
                    out.push_str(&format!(
                        "{} edited\n",
                        object_ref(object.kind(), &object.meta().name)
                    ));
                }
                ctx.print(&out)?;
                return Ok(());
            }
            Err(e) if is_invalid(&e) => {
                let errors: Vec<String> = changed
                    .iter()
                    .map(|o| format!("{} was not valid:\n* {e}", resource_name(o)))
                    .take(1)
                    .collect();
                text = file_text(&errors, &saved);
                last_invalid = Some(saved);
            }
            Err(e) => {
                let what = changed.first().map(resource_name).unwrap_or_default();
                let kept = keep(path)?;
                bail!(
                    "{what} could not be patched: {e}\nYou can run `berth apply -f {}` to try this update again.\nA copy of your changes has been stored to {kept:?}",
                    kept.display()
                );
            }
        }
    }
}

/// Whether the server refused the objects themselves (invalid, or forbidden by admission:
/// reopen the file), not the moment (a conflict) or the connection.
fn is_invalid(e: &ClientError) -> bool {
    matches!(
        e.code(),
        Some(tonic::Code::InvalidArgument | tonic::Code::FailedPrecondition)
    )
}

/// `deployments.apps "web"`, as kube names an object in errors.
fn resource_name(object: &Object) -> String {
    let resource = super::create::resource(object.kind());
    format!("{resource} {:?}", object.meta().name)
}

/// Keeps the temporary file (it is not deleted) and returns its path.
fn keep(path: tempfile::TempPath) -> anyhow::Result<std::path::PathBuf> {
    Ok(path.keep()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::Kind;

    fn deployment(replicas: u32) -> Object {
        let json = format!(
            r#"{{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {{"name": "web", "namespace": "default", "resourceVersion": "7"}}, "spec": {{"replicas": {replicas}, "selector": {{"matchLabels": {{"app": "web"}}}}, "template": {{"metadata": {{"labels": {{"app": "web"}}}}, "spec": {{"containers": [{{"name": "c", "image": "nginx"}}]}}}}}}}}"#
        );
        Object::from_json(Kind::Deployment, json.as_bytes()).expect("valid")
    }

    fn yaml(objects: &[Object]) -> String {
        render_objects(objects, objects.len() == 1, Format::Yaml)
    }

    #[test]
    fn a_save_is_cancelled_changed_or_invalid() {
        let path = Path::new("/tmp/berth-edit-x.yaml");
        let originals = [deployment(1)];
        assert!(matches!(
            read_saved(path, "\n \n", &originals),
            Saved::Cancelled
        ));
        let same = without_comments(&file_text(&[], &yaml(&originals)));
        assert!(matches!(
            read_saved(path, &same, &originals),
            Saved::Cancelled
        ));
        match read_saved(path, &yaml(&[deployment(3)]), &originals) {
            Saved::Changed(changed) => {
                assert_eq!(changed.len(), 1);
                assert_eq!(changed[0].meta().resource_version, "7", "the precondition");
            }
            _ => panic!("a change"),
        }
        let renamed =
            yaml(&originals).replace("name: web\n  namespace", "name: other\n  namespace");
        match read_saved(path, &renamed, &originals) {
            Saved::Invalid(errors) => assert!(errors[0].contains("name was changed"), "{errors:?}"),
            _ => panic!("a renamed object is refused"),
        }
        match read_saved(path, "spec: [", &originals) {
            Saved::Invalid(errors) => {
                assert!(errors[0].contains("berth-edit-x.yaml"), "{errors:?}")
            }
            _ => panic!("unreadable YAML is refused"),
        }
    }

    #[test]
    fn errors_are_comments_under_kubectls_header() {
        let text = file_text(
            &["deployments.apps \"web\" was not valid:\n* bad".into()],
            "kind: X\n",
        );
        assert!(text.starts_with("# Please edit the object below."));
        assert!(
            text.ends_with("#\n# deployments.apps \"web\" was not valid:\n# * bad\n#\nkind: X\n")
        );
        assert_eq!(without_comments(&text), "kind: X\n");
        assert_eq!(resource_name(&deployment(1)), "deployments.apps \"web\"");
    }
}
