//! The `berth-scheduler` binary: Berth's scheduler and API server.

fn main() -> anyhow::Result<()> {
    berth_scheduler::server::cli::main()
}
