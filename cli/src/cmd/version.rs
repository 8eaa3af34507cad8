//! `berth version [--client] [-o json|yaml]`: the client's and the server's versions, as
//! `kubectl version` prints them (`Client Version: v0.1.0`, `Server Version: v0.1.0`; JSON
//! and YAML with `clientVersion` and `serverVersion` objects).

use berth_proto::pb;
use clap::{Args, ValueEnum};
use serde::Serialize;

use super::Context;
use crate::output::Format;

/// Flags of `berth version`.
#[derive(Args, Debug, Clone)]
pub struct VersionArgs {
    /// Print the client's version only (no server is asked).
    #[arg(long)]
    pub client: bool,
    /// Output format: yaml or json.
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    pub output: Option<VersionFormat>,
}

/// `-o` formats of `berth version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VersionFormat {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

/// One side's version, with kubectl's field names (`gitVersion`, `platform`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    /// Major version number.
    pub major: String,
    /// Minor version number.
    pub minor: String,
    /// The release, `v0.1.0`.
    pub git_version: String,
    /// Operating system and architecture in Go's names, `linux/amd64`.
    pub platform: String,
}

impl From<pb::VersionResponse> for Info {
    fn from(v: pb::VersionResponse) -> Self {
        Info {
            major: v.major,
            minor: v.minor,
            git_version: v.git_version,
            platform: v.platform,
        }
    }
}

/// What `-o json|yaml` prints.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Versions {
    client_version: Info,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_version: Option<Info>,
}

/// Runs `berth version`. With the server unreachable the client's version is printed
/// before the error, as kubectl does.
pub async fn run(args: VersionArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let client_version = Info::from(berth_proto::build_version());
    let server = if args.client {
        Ok(None)
    } else {
        server_version(ctx).await.map(Some)
    };
    let (server_version, error) = match server {
        Ok(v) => (v, None),
        Err(e) => (None, Some(e)),
    };
    let versions = Versions {
        client_version,
        server_version,
    };
    ctx.print(&render(&versions, args.output))?;
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Asks the server's Telemetry service for its version.
async fn server_version(ctx: &Context<'_>) -> anyhow::Result<Info> {
    let mut telemetry = super::top::connect_telemetry(ctx).await?;
    let reply = telemetry
        .version(pb::VersionRequest {})
        .await
        .map_err(|s| super::top::status_error(&s))?;
    Ok(reply.into_inner().into())
}

/// The text of `berth version` in a format.
fn render(versions: &Versions, format: Option<VersionFormat>) -> String {
    let value = serde_json::to_value(versions).expect("versions serialize to JSON");
    match format {
        // kubectl's JSON keeps the fields in their declared order; its YAML, made from a
        // map, sorts them.
        Some(VersionFormat::Json) => {
            let text = serde_json::to_string_pretty(versions).expect("versions serialize");
            format!("{text}\n")
        }
        Some(VersionFormat::Yaml) => crate::output::render_value(&value, Format::Yaml),
        None => {
            let mut text = format!("Client Version: {}\n", versions.client_version.git_version);
            if let Some(server) = &versions.server_version {
                text.push_str(&format!("Server Version: {}\n", server.git_version));
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(v: &str) -> Info {
        Info {
            major: "0".into(),
            minor: "1".into(),
            git_version: v.into(),
            platform: "linux/amd64".into(),
        }
    }

    #[test]
    fn text_json_and_yaml_like_kubectl() {
        let both = Versions {
            client_version: info("v0.1.0"),
            server_version: Some(info("v0.2.0")),
        };
        assert_eq!(
            render(&both, None),
            "Client Version: v0.1.0\nServer Version: v0.2.0\n"
        );
        let client_only = Versions {
            client_version: info("v0.1.0"),
            server_version: None,
        };
        assert_eq!(render(&client_only, None), "Client Version: v0.1.0\n");
        assert_eq!(
            render(&client_only, Some(VersionFormat::Json)),
            "{\n  \"clientVersion\": {\n    \"major\": \"0\",\n    \"minor\": \"1\",\n    \"gitVersion\": \"v0.1.0\",\n    \"platform\": \"linux/amd64\"\n  }\n}\n"
        );
        assert_eq!(
            render(&both, Some(VersionFormat::Yaml)),
            "clientVersion:\n  gitVersion: v0.1.0\n  major: '0'\n  minor: '1'\n  platform: linux/amd64\nserverVersion:\n  gitVersion: v0.2.0\n  major: '0'\n  minor: '1'\n  platform: linux/amd64\n"
        );
    }

    #[test]
    fn the_build_version_is_the_crate_version() {
        let v = Info::from(berth_proto::build_version());
        assert_eq!(v.git_version, format!("v{}", env!("CARGO_PKG_VERSION")));
        assert!(v.platform.contains('/'), "{}", v.platform);
    }
}
