//! `berth apply -f PATH...`: reads and checks every manifest, then sends all objects in one
//! all-or-nothing request, printing `pod/web created|configured|unchanged` per object.

use anyhow::bail;
use clap::{Args, ValueEnum};

use berth_proto::model::Object;

use super::{object_ref, Context};
use crate::manifest;

/// Flags of `berth apply`.
#[derive(Args, Debug, Clone)]
pub struct ApplyArgs {
    /// Manifests: files, folders (their *.yaml, *.yml and *.json files, not subfolders), or
    /// `-` for standard input. Repeat for several.
    #[arg(short = 'f', long = "filename", required = true, value_name = "PATH")]
    pub filenames: Vec<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub dry_run: DryRunFlag,
}

/// `--dry-run[=STRATEGY]`, as `apply` and `create` take it.
#[derive(Args, Debug, Clone, Copy)]
pub struct DryRunFlag {
    /// Store nothing. `server`: the server admits and validates the objects (`created
    /// (server dry run)`); `client` (also `--dry-run` alone, as kubectl) sends nothing to
    /// store (`apply` asks the server each object's fate; `create` prints the object).
    #[arg(
        long = "dry-run",
        value_enum,
        num_args = 0..=1,
        require_equals = true,
        default_value = "none",
        default_missing_value = "client",
        value_name = "STRATEGY"
    )]
    pub strategy: DryRun,
}

/// `--dry-run` strategies, as kubectl names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    /// Store the objects.
    None,
    /// Validate locally and with the server; store nothing.
    Client,
    /// Validate with the server; store nothing.
    Server,
}

/// What kubectl appends to a verb's message for a dry run.
pub fn dry_run_suffix(dry_run: DryRun) -> &'static str {
    match dry_run {
        DryRun::None => "",
        DryRun::Client => " (dry run)",
        DryRun::Server => " (server dry run)",
    }
}

/// The objects of manifests as `apply` sends them: namespaced ones in `-n`'s namespace (or
/// `default`) unless they name one, which must then agree with `-n`.
pub fn objects_from(filenames: &[String], ctx: &Context<'_>) -> anyhow::Result<Vec<Object>> {
    let manifests = manifest::load(filenames)?;
    if manifests.is_empty() {
        bail!("no objects passed to apply");
    }
    let mut objects = Vec::with_capacity(manifests.len());
    for m in manifests {
        let mut object = m.object;
        let kind = object.kind();
        let meta = object.meta_mut();
        if kind.is_namespaced() {
            if let Some(ns) = ctx.explicit_namespace() {
                if !meta.namespace.is_empty() && meta.namespace != ns {
                    bail!(
                        "the namespace from the provided object {:?} does not match the namespace {ns:?}. You must pass '--namespace={}' to perform this operation.",
                        meta.namespace,
                        meta.namespace
                    );
                }
            }
            if meta.namespace.is_empty() {
                meta.namespace = ctx.namespace().to_string();
            }
        } else {
            meta.namespace.clear();
        }
        objects.push(object);
    }
    Ok(objects)
}

/// Runs `berth apply`.
pub async fn run(args: ApplyArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let objects = objects_from(&args.filenames, ctx)?;
    let mut client = ctx.connect().await?;
    let dry_run = args.dry_run.strategy != DryRun::None;
    let results = client.apply(&objects, dry_run).await?;
    let suffix = dry_run_suffix(args.dry_run.strategy);
    let mut text = String::new();
    for r in results {
        text.push_str(&format!(
            "{} {}{suffix}\n",
            object_ref(r.kind, &r.name),
            r.action
        ));
    }
    ctx.print(&text)?;
    Ok(())
}
