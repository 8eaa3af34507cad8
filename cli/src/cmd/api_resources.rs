//! `berth api-resources`: the kinds the server stores, as `kubectl api-resources` lists
//! them (`NAME SHORTNAMES APIVERSION NAMESPACED KIND`), from the model's one list of kinds:
//! the core group first, then the other groups by name, resources by name within a group.

use berth_proto::model::Kind;
use clap::{Args, ValueEnum};

use super::Context;
use crate::output::Table;

/// Flags of `berth api-resources`.
#[derive(Args, Debug, Clone)]
pub struct ApiResourcesArgs {
    /// Only namespaced resources (`true`) or only cluster-scoped ones (`false`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub namespaced: Option<bool>,
    /// Only the resources of this API group (`""` for the core group, `apps`, `batch`).
    #[arg(long, value_name = "GROUP")]
    pub api_group: Option<String>,
    /// Output format: `wide` or `name` (`pods`, `deployments.apps`).
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    pub output: Option<ApiResourcesFormat>,
    /// Leave out the header line.
    #[arg(long)]
    pub no_headers: bool,
}

/// `-o` formats of `berth api-resources`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ApiResourcesFormat {
    /// The table with a VERBS column.
    Wide,
    /// `resource.group` per line.
    Name,
}

/// The verbs Berth serves for every resource (`-o wide`): apply is create or update.
const VERBS: &str = "[create delete get list update watch]";

/// The API group of a kind (`""` for the core group).
fn group(kind: Kind) -> &'static str {
    kind.api_version().rsplit_once('/').map_or("", |(g, _)| g)
}

/// The kinds in kubectl's order, filtered by the flags.
fn resources(args: &ApiResourcesArgs) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|k| args.namespaced.is_none_or(|n| k.is_namespaced() == n))
        .filter(|k| args.api_group.as_deref().is_none_or(|g| group(*k) == g))
        .collect();
    kinds.sort_by_key(|k| (!group(*k).is_empty(), group(*k), k.plural()));
    kinds
}

/// The output of `berth api-resources`.
fn render(args: &ApiResourcesArgs) -> String {
    let kinds = resources(args);
    if args.output == Some(ApiResourcesFormat::Name) {
        return kinds
            .iter()
            .map(|k| match group(*k) {
                "" => format!("{}\n", k.plural()),
                g => format!("{}.{g}\n", k.plural()),
            })
            .collect();
    }
    let wide = args.output == Some(ApiResourcesFormat::Wide);
    let mut header = vec!["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"];
    if wide {
        header.push("VERBS");
    }
    let mut table = Table::new(header);
    for kind in kinds {
        let mut row = vec![
            kind.plural().to_string(),
            kind.short_names().join(","),
            kind.api_version().to_string(),
            kind.is_namespaced().to_string(),
            kind.as_str().to_string(),
        ];
        if wide {
            row.push(VERBS.to_string());
        }
        table.row(row);
    }
    table.render(!args.no_headers)
}

/// Runs `berth api-resources` (the kinds are this build's, so no server is asked).
pub async fn run(args: ApiResourcesArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    ctx.print(&render(&args))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ApiResourcesArgs {
        ApiResourcesArgs {
            namespaced: None,
            api_group: None,
            output: None,
            no_headers: false,
        }
    }

    #[test]
    fn every_kind_once_core_group_first_like_kubectl() {
        let text = render(&args());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), Kind::ALL.len() + 1, "{text}");
        let cells: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(
            cells,
            ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
        );
        assert!(lines[1].starts_with("events "), "{text}");
        let pods: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("pods "))
            .expect("pods")
            .split_whitespace()
            .collect();
        assert_eq!(pods, ["pods", "po", "v1", "true", "Pod"]);
        let jobs: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("jobs "))
            .expect("jobs")
            .split_whitespace()
            .collect();
        assert_eq!(jobs, ["jobs", "batch/v1", "true", "Job"], "no short name");
        let deployments = text.find("deployments").expect("deployments");
        assert!(text.find("pods").expect("pods") < deployments, "{text}");
    }

    #[test]
    fn filters_and_name_output() {
        let mut a = args();
        a.namespaced = Some(false);
        a.api_group = Some("scheduling.k8s.io".into());
        a.output = Some(ApiResourcesFormat::Name);
        assert_eq!(render(&a), "priorityclasses.scheduling.k8s.io\n");
        let mut core = args();
        core.api_group = Some(String::new());
        core.output = Some(ApiResourcesFormat::Name);
        core.namespaced = Some(false);
        assert_eq!(render(&core), "namespaces\nnodes\n");
    }

    #[test]
    fn every_short_name_parses_back_to_its_kind() {
        for kind in Kind::ALL {
            for short in kind.short_names() {
                assert_eq!(Kind::from_cli(short), Some(kind), "{short}");
            }
            assert_eq!(Kind::from_cli(kind.plural()), Some(kind));
        }
    }
}
