//! `berth completion bash|zsh|fish`: a shell completion script for every verb and flag,
//! generated from the command line's own definition, as `kubectl completion SHELL` prints
//! one (`source <(berth completion bash)`).

use clap::{Args, CommandFactory, ValueEnum};

use super::Context;

/// Flags of `berth completion`.
#[derive(Args, Debug, Clone)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Shells `berth completion` writes scripts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// bash: `source <(berth completion bash)`.
    Bash,
    /// zsh: `source <(berth completion zsh)`.
    Zsh,
    /// fish: `berth completion fish | source`.
    Fish,
}

/// The completion script for a shell.
pub fn script(shell: Shell) -> String {
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut command = crate::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(generator, &mut command, "berth", &mut out);
    String::from_utf8(out).expect("completion scripts are UTF-8")
}

/// Runs `berth completion`.
pub async fn run(args: CompletionArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    ctx.print(&script(args.shell))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_name_the_verbs_and_their_flags() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = script(shell);
            for word in ["rollout", "api-resources", "dry-run", "show-labels"] {
                assert!(text.contains(word), "{shell:?} script lacks {word}");
            }
        }
        assert!(script(Shell::Bash).contains("complete -F _berth"));
        assert!(script(Shell::Fish).contains("complete -c berth"));
    }
}
