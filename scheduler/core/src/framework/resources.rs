//! Resource vectors and the effective-request rules, from the API crate, so that the
//! scheduler and the agent's node-side admission compute a pod's request the same way.

pub use berth_model::resources::*;
