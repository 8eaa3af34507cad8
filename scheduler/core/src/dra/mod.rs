//! Dynamic Resource Allocation in the scheduling core: kube's structured allocator over a
//! flattened device inventory ([`allocator`]), and the DRA objects the DynamicResources
//! plugin reads, kept in the snapshot with the allocations in flight ([`state`]).

pub mod allocator;
pub mod convert;
pub mod env;
pub mod state;
pub mod template;
