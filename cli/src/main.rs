//! The `berth` binary: kubectl-like client, `berth dev` and `berth sim` (see `berth_cli`).

fn main() -> std::process::ExitCode {
    berth_cli::main()
}
