//! Progress of long waits (`rollout status`, `wait`): on a terminal one status line that is
//! rewritten in place, with a spinner and the time waited; when the output is piped, each new
//! status as a plain line of its own (a status repeated unchanged is not printed again).

use std::time::Instant;

use crate::cmd::Context;

/// Frames of the spinner shown on a terminal.
const SPINNER: [char; 4] = ['|', '/', '-', '\\'];

/// A status line that follows a long wait.
pub struct Progress {
    terminal: bool,
    started: Instant,
    frame: usize,
    last: Option<String>,
    open: bool,
}

impl Progress {
    /// A progress display; `terminal` says whether the output is a terminal.
    pub fn new(terminal: bool) -> Self {
        Progress {
            terminal,
            started: Instant::now(),
            frame: 0,
            last: None,
            open: false,
        }
    }

    /// The text to write for a new status (empty when nothing is to be written).
    pub fn render(&mut self, message: &str) -> String {
        if !self.terminal {
            if self.last.as_deref() == Some(message) {
                return String::new();
            }
            self.last = Some(message.to_string());
            return format!("{message}\n");
        }
        let spinner = SPINNER[self.frame % SPINNER.len()];
        self.frame += 1;
        self.open = true;
        let waited = self.started.elapsed().as_secs();
        format!("\r\x1b[2K{spinner} {message} ({waited}s)")
    }

    /// The text that ends the display: on a terminal, clears the status line.
    pub fn render_finish(&mut self) -> String {
        if std::mem::take(&mut self.open) {
            "\r\x1b[2K".to_string()
        } else {
            String::new()
        }
    }

    /// Shows a new status.
    pub fn line(&mut self, ctx: &mut Context<'_>, message: &str) -> std::io::Result<()> {
        let text = self.render(message);
        ctx.print(&text)
    }

    /// Ends the display, before the final message is printed.
    pub fn finish(&mut self, ctx: &mut Context<'_>) -> std::io::Result<()> {
        let text = self.render_finish();
        ctx.print(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_when_piped_and_one_rewritten_line_on_a_terminal() {
        let mut piped = Progress::new(false);
        let got: Vec<String> = ["a", "a", "b", "a"]
            .iter()
            .map(|m| piped.render(m))
            .collect();
        assert_eq!(got, ["a\n", "", "b\n", "a\n"]);
        assert_eq!(piped.render_finish(), "");

        let mut terminal = Progress::new(true);
        assert_eq!(
            terminal.render_finish(),
            "",
            "nothing shown, nothing to clear"
        );
        assert_eq!(terminal.render("a"), "\r\x1b[2K| a (0s)");
        assert_eq!(terminal.render("a"), "\r\x1b[2K/ a (0s)");
        assert_eq!(terminal.render_finish(), "\r\x1b[2K");
        assert_eq!(terminal.render_finish(), "");
    }
}
