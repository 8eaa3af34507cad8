//! The `berth-agent` binary: Berth's node agent. Everything lives in the `berth_agent`
//! library; see `berth_agent::cli::main`.

fn main() -> anyhow::Result<()> {
    berth_agent::cli::main()
}
