//! The `berth-agent` binary: Berth's node agent (its body is `berth_cli::daemon`, shared
//! with `berth agent`).

fn main() -> anyhow::Result<()> {
    berth_cli::daemon::agent_main_from(std::env::args_os())
}
