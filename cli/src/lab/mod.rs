//! `berth lab`: experiments over time with the real scheduler and a simulated clock.

pub mod report;
