//! `berth create namespace|priorityclass|deployment NAME ...`: kubectl's imperative
//! generators. Each builds the object kubectl builds from its flags, refuses a name that is
//! taken (`namespaces "dev" already exists`), and prints `namespace/dev created`; with
//! `--dry-run=client` nothing is sent, with `--dry-run=server` the server checks the object
//! and stores nothing, and `-o yaml|json|name` prints the object instead of the message.

use anyhow::bail;
use berth_proto::model::{Kind, Object};
use clap::{ArgAction, Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use super::apply::{DryRun, DryRunFlag};
use super::{object_ref, Context};
use crate::output::{render_objects, Format};

/// Flags of `berth create`.
#[derive(Args, Debug, Clone)]
pub struct CreateArgs {
    /// What to create.
    #[command(subcommand)]
    pub what: CreateCommand,
}

/// The generators of `berth create`.
#[derive(Subcommand, Debug, Clone)]
pub enum CreateCommand {
    /// Create a namespace.
    #[command(visible_alias = "ns")]
    Namespace(NamespaceArgs),
    /// Create a priority class.
    #[command(visible_alias = "pc")]
    Priorityclass(PriorityClassArgs),
    /// Create a deployment whose pods run the given images (`-- COMMAND ARGS...` sets the
    /// containers' command).
    #[command(visible_alias = "deploy")]
    Deployment(DeploymentArgs),
}

/// Flags every generator takes: the dry-run strategy and the output format.
#[derive(Args, Debug, Clone)]
pub struct CreateOutput {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub dry_run: DryRunFlag,
    /// Print the object (yaml, json) or `kind/name` (name) instead of the message.
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    pub output: Option<CreateFormat>,
}

/// `-o` formats of `berth create`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CreateFormat {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
    /// `kind/name`.
    Name,
}

/// Flags of `berth create namespace`.
#[derive(Args, Debug, Clone)]
pub struct NamespaceArgs {
    /// The namespace's name.
    pub name: String,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: CreateOutput,
}

/// Flags of `berth create priorityclass`.
#[derive(Args, Debug, Clone)]
pub struct PriorityClassArgs {
    /// The class's name.
    pub name: String,
    /// The priority of pods of this class.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub value: i32,
    /// Whether pods without a priorityClassName get this class.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_value_t = false, default_missing_value = "true", value_name = "BOOL")]
    pub global_default: bool,
    /// What the class is for.
    #[arg(long, default_value = "")]
    pub description: String,
    /// `PreemptLowerPriority` or `Never`.
    #[arg(long, default_value = "PreemptLowerPriority")]
    pub preemption_policy: String,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: CreateOutput,
}

/// Flags of `berth create deployment`.
#[derive(Args, Debug, Clone)]
pub struct DeploymentArgs {
    /// The deployment's name.
    pub name: String,
    /// The images to run, one container each (repeat, or separate with commas).
    #[arg(long, required = true, value_delimiter = ',', value_name = "IMAGE")]
    pub image: Vec<String>,
    /// The port the (first) container exposes.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub port: i32,
    /// Number of replicas.
    #[arg(short = 'r', long, default_value_t = 1)]
    pub replicas: i32,
    /// The containers' command, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: CreateOutput,
}

/// The Namespace kubectl's generator builds.
pub fn namespace(name: &str) -> anyhow::Result<Object> {
    object(Kind::Namespace, json!({"metadata": {"name": name}}))
}

/// The PriorityClass kubectl's generator builds.
pub fn priority_class(args: &PriorityClassArgs) -> anyhow::Result<Object> {
    let mut value = json!({
        "metadata": {"name": args.name},
        "value": args.value,
        "globalDefault": args.global_default,
        "preemptionPolicy": args.preemption_policy,
    });
    if !args.description.is_empty() {
        value["description"] = json!(args.description);
    }
    object(Kind::PriorityClass, value)
}

/// The Deployment kubectl's generator builds: label and selector `app=NAME`, one container
/// per image named after the image (registry, tag and digest dropped; `_` and `.` made `-`
/// with a random suffix), `--port` on the first container. `namespace` is set only when
/// given with `-n`, as kubectl does.
pub fn deployment(args: &DeploymentArgs, namespace: Option<&str>) -> anyhow::Result<Object> {
    if args.image.len() > 1 && !args.command.is_empty() {
        bail!("cannot specify multiple --image options and command");
    }
    let mut containers: Vec<Value> = args
        .image
        .iter()
        .map(|image| {
            let mut container = json!({"name": container_name(image), "image": image});
            if !args.command.is_empty() {
                container["command"] = json!(args.command);
            }
            container
        })
        .collect();
    if args.port >= 0 {
        if let Some(first) = containers.first_mut() {
            first["ports"] = json!([{"containerPort": args.port}]);
        }
    }
    let labels = json!({"app": args.name});
    let mut metadata = json!({"name": args.name, "labels": labels});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    object(
        Kind::Deployment,
        json!({
            "metadata": metadata,
            "spec": {
                "replicas": args.replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": containers},
                },
            },
        }),
    )
}

/// kubectl's container name for an image: its last path segment without tag or digest;
/// one with `_` or `.` gets them as `-` and a random suffix.
fn container_name(image: &str) -> String {
    let name = image.rsplit('/').next().unwrap_or(image);
    let name = name.split(':').next().unwrap_or(name);
    let name = name.split('@').next().unwrap_or(name);
    if name.contains(['_', '.']) {
        let suffix = berth_scheduler::workloads::random_suffix(&mut rand::rng());
        format!("{}-{suffix}", name.replace(['_', '.'], "-"))
    } else {
        name.to_string()
    }
}

/// An object of `kind` from its JSON, read (and so checked) as the server reads it.
fn object(kind: Kind, mut value: Value) -> anyhow::Result<Object> {
    value["apiVersion"] = json!(kind.api_version());
    value["kind"] = json!(kind.as_str());
    let bytes = serde_json::to_vec(&value).expect("JSON values serialize");
    Ok(Object::from_json(kind, &bytes)?)
}

/// Runs `berth create`.
pub async fn run(args: CreateArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let (object, output) = match &args.what {
        CreateCommand::Namespace(a) => (namespace(&a.name)?, &a.output),
        CreateCommand::Priorityclass(a) => (priority_class(a)?, &a.output),
        CreateCommand::Deployment(a) => (deployment(a, ctx.explicit_namespace())?, &a.output),
    };
    create(object, output, ctx).await
}

/// Creates one object as `berth create` does (see the module's doc).
pub async fn create(
    mut object: Object,
    output: &CreateOutput,
    ctx: &mut Context<'_>,
) -> anyhow::Result<()> {
    let kind = object.kind();
    let name = object.meta().name.clone();
    let mut stored = None;
    if output.dry_run.strategy != DryRun::Client {
        let mut sent = object.clone();
        if kind.is_namespaced() && sent.meta().namespace.is_empty() {
            sent.meta_mut().namespace = ctx.namespace().to_string();
        }
        let namespace = sent.meta().namespace.clone();
        let mut client = ctx.connect().await?;
        match client.get(kind, &namespace, &name).await {
            Ok(_) => bail!("{} {name:?} already exists", resource(kind)),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        let dry_run = output.dry_run.strategy == DryRun::Server;
        client.apply(std::slice::from_ref(&sent), dry_run).await?;
        stored = if dry_run {
            Some(sent)
        } else {
            Some(client.get(kind, &namespace, &name).await?)
        };
    }
    if let Some(stored) = stored {
        object = stored;
    }
    let text = match output.output {
        Some(CreateFormat::Yaml) => render_objects(&[object], true, Format::Yaml),
        Some(CreateFormat::Json) => render_objects(&[object], true, Format::Json),
        Some(CreateFormat::Name) => format!("{}\n", object_ref(kind, &name)),
        None => format!(
            "{} created{}\n",
            object_ref(kind, &name),
            super::apply::dry_run_suffix(output.dry_run.strategy)
        ),
    };
    ctx.print(&text)?;
    Ok(())
}

/// A kind's resource as kube names it in messages: `namespaces`, `deployments.apps`.
pub fn resource(kind: Kind) -> String {
    match kind.api_version().rsplit_once('/') {
        Some((group, _)) => format!("{}.{group}", kind.plural()),
        None => kind.plural().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> CreateCommand {
        let cli = crate::Cli::try_parse_from(std::iter::once("berth").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        match cli.command {
            crate::Command::Create(c) => c.what,
            other => panic!("not create: {other:?}"),
        }
    }

    fn value(object: &Object) -> Value {
        crate::output::object_value(object)
    }

    #[test]
    fn deployment_like_kubectls_generator() {
        let CreateCommand::Deployment(args) = parse(&[
            "create",
            "deployment",
            "web",
            "--image=registry.example/team/nginx:1.26",
            "--port=80",
            "-r",
            "3",
        ]) else {
            panic!("a deployment")
        };
        let d = value(&deployment(&args, None).expect("valid"));
        assert_eq!(d["metadata"]["labels"]["app"], "web");
        assert!(d["metadata"].get("namespace").is_none(), "{d}");
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["name"], "nginx");
        assert_eq!(c["image"], "registry.example/team/nginx:1.26");
        assert_eq!(c["ports"][0]["containerPort"], 80);

        let CreateCommand::Deployment(args) = parse(&[
            "create",
            "deploy",
            "job",
            "--image=busy_box.v2@sha256:ab",
            "--",
            "sleep",
            "5",
        ]) else {
            panic!("a deployment")
        };
        let d = value(&deployment(&args, Some("dev")).expect("valid"));
        assert_eq!(d["metadata"]["namespace"], "dev");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        let name = c["name"].as_str().expect("a name");
        assert!(
            name.starts_with("busy-box-v2-") && name.len() == 17,
            "{name}"
        );
        assert_eq!(c["command"], json!(["sleep", "5"]));
        assert!(c.get("ports").is_none());

        let CreateCommand::Deployment(args) =
            parse(&["create", "deployment", "x", "--image=a,b", "--", "date"])
        else {
            panic!("a deployment")
        };
        let err = deployment(&args, None).expect_err("two images and a command");
        assert_eq!(
            err.to_string(),
            "cannot specify multiple --image options and command"
        );
    }

    #[test]
    fn priority_class_and_namespace_like_kubectls_generators() {
        let CreateCommand::Priorityclass(args) = parse(&[
            "create",
            "priorityclass",
            "high",
            "--value=1000",
            "--global-default",
            "--description=for the web tier",
            "--preemption-policy=Never",
        ]) else {
            panic!("a priority class")
        };
        let pc = value(&priority_class(&args).expect("valid"));
        assert_eq!(pc["value"], 1000);
        assert_eq!(pc["globalDefault"], true);
        assert_eq!(pc["description"], "for the web tier");
        assert_eq!(pc["preemptionPolicy"], "Never");
        let CreateCommand::Priorityclass(args) = parse(&[
            "create",
            "pc",
            "low",
            "--value=-5",
            "--global-default=false",
        ]) else {
            panic!("a priority class")
        };
        let pc = value(&priority_class(&args).expect("valid"));
        assert_eq!(pc["value"], -5);
        assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");

        let ns = value(&namespace("dev").expect("valid"));
        assert_eq!(ns["kind"], "Namespace");
        assert_eq!(ns["metadata"]["name"], "dev");
        assert_eq!(resource(Kind::Namespace), "namespaces");
        assert_eq!(resource(Kind::Deployment), "deployments.apps");
    }
}
