//! Berth agent.
