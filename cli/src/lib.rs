//! Berth CLI.
