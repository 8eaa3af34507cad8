//! The `berth-scheduler` binary: Berth's scheduler and API server (its body is
//! `berth_cli::daemon`, shared with `berth scheduler`).

fn main() -> anyhow::Result<()> {
    berth_cli::daemon::scheduler_main_from(std::env::args_os())
}
