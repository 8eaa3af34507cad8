//! `berth scale deployment NAME --replicas N` (also `replicaset`, and the `TYPE/NAME`
//! form): sets `spec.replicas` through read, modify and a conditional apply, printing
//! `deployment.apps/web scaled` as kubectl does.

use anyhow::bail;
use berth_proto::model::{Kind, Object};
use clap::Args;

use super::{named_objects_required, object_ref, parse_targets, update_each, Context, Update};

/// Flags of `berth scale`.
#[derive(Args, Debug, Clone)]
pub struct ScaleArgs {
    /// What to scale: `TYPE NAME...` or `TYPE/NAME...` (deployments, replicasets).
    #[arg(required = true, value_name = "TYPE [NAME]...")]
    pub resources: Vec<String>,
    /// The new number of replicas.
    #[arg(long, value_parser = clap::value_parser!(i32).range(0..))]
    pub replicas: i32,
}

/// Sets the replicas of a Deployment or ReplicaSet; the message kubectl prints.
pub fn scale_update(object: &mut Object, replicas: i32) -> anyhow::Result<Update> {
    let (kind, name) = (object.kind(), object.meta().name.clone());
    match object {
        Object::Deployment(d) => d.spec.replicas = replicas,
        Object::ReplicaSet(rs) => rs.spec.replicas = replicas,
        _ => bail!(
            "cannot scale {}: only deployments and replicasets have replicas",
            object_ref(kind, &name)
        ),
    }
    Ok(Update::Write(format!("{} scaled", object_ref(kind, &name))))
}

/// Runs `berth scale`.
pub async fn run(args: ScaleArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let objects = named_objects_required(&parse_targets(&args.resources)?)?;
    if let Some((kind, _)) = objects
        .iter()
        .find(|(k, _)| !matches!(k, Kind::Deployment | Kind::ReplicaSet))
    {
        bail!(
            "cannot scale {}: only deployments and replicasets have replicas",
            kind.plural()
        );
    }
    let replicas = args.replicas;
    update_each(ctx, objects, move |object: &mut Object| {
        scale_update(object, replicas)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_sets_replicas_and_prints_like_kubectl() {
        let cases = [
            (Kind::Deployment, Ok("deployment.apps/web scaled")),
            (Kind::ReplicaSet, Ok("replicaset.apps/web scaled")),
            (Kind::Node, Err("cannot scale node/web")),
        ];
        for (kind, want) in cases {
            let name = kind.as_str();
            let mut object = Object::from_json(kind, br#"{"metadata": {"name": "web"}}"#)
                .expect("a valid object");
            match (scale_update(&mut object, 5), want) {
                (Ok(Update::Write(msg)), Ok(want)) => {
                    assert_eq!(msg, want, "{name}");
                    let replicas = match &object {
                        Object::Deployment(d) => d.spec.replicas,
                        Object::ReplicaSet(rs) => rs.spec.replicas,
                        _ => unreachable!("only scalable kinds succeed"),
                    };
                    assert_eq!(replicas, 5, "{name}");
                }
                (Err(e), Err(want)) => assert!(e.to_string().starts_with(want), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}
