//! `berth lab`'s engine: traces loaded into typed records and the arrival orders a run
//! replays (lab.md).

pub mod engine;
pub mod experiment;
pub mod objects;
pub mod openb;
pub mod summary;

#[cfg(test)]
mod reference;
