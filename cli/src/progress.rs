//! Progress of long waits (`rollout status`, `wait`, `berth dev` starting): on a terminal one
//! status line that is rewritten in place, with a spinner and the time waited; when the
//! output is piped, each new status as a plain line of its own (a status repeated unchanged
//! is not printed again), or nothing for a verb whose piped output is kubectl's (`wait`).

use std::io::Write;
use std::time::{Duration, Instant};

use crate::cmd::Context;

/// Frames of the spinner shown on a terminal.
const SPINNER: [char; 4] = ['|', '/', '-', '\\'];

/// How often a wait on a terminal redraws its status line (the spinner and the time).
pub const REDRAW: Duration = Duration::from_millis(250);

/// A status line that follows a long wait.
pub struct Progress {
    terminal: bool,
    /// Whether statuses are written when the output is not a terminal.
    piped_lines: bool,
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
            piped_lines: true,
            started: Instant::now(),
            frame: 0,
            last: None,
            open: false,
        }
    }

    /// A display that shows nothing unless the output is a terminal.
    pub fn terminal_only(terminal: bool) -> Self {
        Progress {
            piped_lines: false,
            ..Progress::new(terminal)
        }
    }

    /// Whether the status is drawn in place (a wait should then redraw every [`REDRAW`]).
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The text to write for a new status (empty when nothing is to be written).
    pub fn render(&mut self, message: &str) -> String {
        if !self.terminal {
            if !self.piped_lines {
                return String::new();
            }
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

    /// Shows a new status on a verb's output.
    pub fn line(&mut self, ctx: &mut Context<'_>, message: &str) -> std::io::Result<()> {
        let text = self.render(message);
        ctx.print(&text)
    }

    /// Ends the display on a verb's output, before the final message is printed.
    pub fn finish(&mut self, ctx: &mut Context<'_>) -> std::io::Result<()> {
        let text = self.render_finish();
        ctx.print(&text)
    }

    /// Shows a new status on `out`.
    pub fn line_to(&mut self, out: &mut dyn Write, message: &str) -> std::io::Result<()> {
        let text = self.render(message);
        out.write_all(text.as_bytes())?;
        out.flush()
    }

    /// Ends the display on `out`.
    pub fn finish_to(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        let text = self.render_finish();
        out.write_all(text.as_bytes())?;
        out.flush()
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

        let mut quiet = Progress::terminal_only(false);
        assert_eq!(quiet.render("a"), "", "nothing when piped");
        assert_eq!(quiet.render_finish(), "");
        assert!(Progress::terminal_only(true)
            .render("a")
            .ends_with("a (0s)"));
    }
}
