//! The scheduling cycle: `schedule_one` as a pipeline of named stages.
