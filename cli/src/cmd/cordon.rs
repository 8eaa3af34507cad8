//! `berth cordon NODE...` and `berth uncordon NODE...`: set or clear a node's
//! `spec.unschedulable`, through read, modify and a conditional apply.

use berth_proto::model::{Kind, Object};
use clap::Args;

use super::{object_ref, update_each, Context, Update};

/// Flags of `berth cordon` and `berth uncordon`.
#[derive(Args, Debug, Clone)]
pub struct CordonArgs {
    /// Node names.
    #[arg(required = true, value_name = "NODE")]
    pub nodes: Vec<String>,
}

/// The message kubectl prints, and whether the node needs writing.
pub fn cordon_update(object: &mut Object, cordon: bool) -> anyhow::Result<Update> {
    let Object::Node(node) = object else {
        anyhow::bail!("only nodes can be cordoned");
    };
    let name = object_ref(Kind::Node, &node.metadata.name);
    let verb = if cordon { "cordoned" } else { "uncordoned" };
    if node.spec.unschedulable == cordon {
        return Ok(Update::Unchanged(format!("{name} already {verb}")));
    }
    node.spec.unschedulable = cordon;
    Ok(Update::Write(format!("{name} {verb}")))
}

/// Runs `berth cordon` (`cordon` true) or `berth uncordon`.
pub async fn run(args: CordonArgs, cordon: bool, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let nodes = args
        .nodes
        .iter()
        .map(|n| {
            let name = n
                .strip_prefix("node/")
                .or(n.strip_prefix("nodes/"))
                .unwrap_or(n);
            (Kind::Node, name.to_string())
        })
        .collect();
    update_each(ctx, nodes, |object: &mut Object| {
        cordon_update(object, cordon)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::Kind;

    #[test]
    fn cordon_messages_follow_kubectl() {
        // (node already unschedulable, cordon or uncordon, node written, what kubectl prints)
        let cases = [
            (false, true, true, "node/n1 cordoned"),
            (true, true, false, "node/n1 already cordoned"),
            (true, false, true, "node/n1 uncordoned"),
            (false, false, false, "node/n1 already uncordoned"),
        ];
        for (unschedulable, cordon, written, name) in cases {
            let want = if written {
                Update::Write(name.into())
            } else {
                Update::Unchanged(name.into())
            };
            let mut node = Object::from_json(Kind::Node, br#"{"metadata": {"name": "n1"}}"#)
                .expect("a valid node");
            if let Object::Node(n) = &mut node {
                n.spec.unschedulable = unschedulable;
            }
            let got = cordon_update(&mut node, cordon).expect(name);
            assert_eq!(got, want, "{name}");
            let Object::Node(n) = &node else {
                unreachable!("still a node")
            };
            assert_eq!(n.spec.unschedulable, cordon, "{name}");
        }
    }
}
