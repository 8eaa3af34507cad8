//! Berth store.
