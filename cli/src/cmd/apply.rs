//! `berth apply -f PATH...`: reads and checks every manifest, then sends all objects in one
//! all-or-nothing request, printing `pod/web created|configured|unchanged` per object.

use anyhow::bail;
use clap::{Args, ValueEnum};

use super::{object_ref, Context};
use crate::manifest;

/// Flags of `berth apply`.
#[derive(Args, Debug, Clone)]
pub struct ApplyArgs {
    /// Manifests: files, folders (their *.yaml, *.yml and *.json files, not subfolders), or
    /// `-` for standard input. Repeat for several.
    #[arg(short = 'f', long = "filename", required = true, value_name = "PATH")]
    pub filenames: Vec<String>,
    /// Check the objects with the server without storing them. `--dry-run` alone means
    /// `server`; `client` does the same (Berth's server-side check stores nothing).
    #[arg(
        long,
        value_enum,
        num_args = 0..=1,
        require_equals = true,
        default_value = "none",
        default_missing_value = "server",
        value_name = "STRATEGY"
    )]
    pub dry_run: DryRun,
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

/// Runs `berth apply`.
pub async fn run(args: ApplyArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let manifests = manifest::load(&args.filenames)?;
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
    let mut client = ctx.connect().await?;
    let dry_run = args.dry_run != DryRun::None;
    let results = client.apply(&objects, dry_run).await?;
    let suffix = match args.dry_run {
        DryRun::None => "",
        DryRun::Client => " (dry run)",
        DryRun::Server => " (server dry run)",
    };
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
