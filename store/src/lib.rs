//! Berth's durable object store: typed Kubernetes objects on local disk (sled) or in an etcd
//! cluster, with a global revision, atomic multi-object commits and a stream of changes.
//!
//! # Layout
//!
//! - [`ObjectStore`] (in `object_store.rs`) is the narrow interface the scheduler codes
//!   against: `get`, `list`, `commit` a batch of [`Op`]s atomically, `revision`, and
//!   `subscribe` to the resulting [`Change`]s.
//! - [`SledStore`] (in `sled_store.rs`) implements it on sled. Each [`Kind`] has its own tree,
//!   named by the kind's plural resource (`pods`, `nodes`, `priorityclasses`, `events`,
//!   `namespaces`, `runtimeclasses`, `poddisruptionbudgets`, `deployments`, `replicasets`,
//!   `daemonsets`, `resourcequotas`) and keyed by `namespace/name`, or `name` for
//!   cluster-scoped kinds, whose values are the objects as JSON (the model types' serde form).
//!   A `meta` tree holds the revision counter. A commit is one sled transaction across all of
//!   these trees, then a flush, then a broadcast of its changes.
//! - [`Elector`], [`Leadership`], [`Guard`] and [`FencedStore`] (in `election.rs`): leader
//!   election and writes fenced on the leadership, so a deposed leader cannot write;
//!   [`LocalElector`] is the in-process elector for sled.
//! - [`EtcdStore`] (in `etcd_store.rs`) implements it on etcd's v3 API: keys
//!   `/berth/<plural>/<namespace>/<name>`, resourceVersion = the key's mod_revision, one
//!   transaction per commit, a watch feeding `subscribe`, a compactor; [`EtcdElector`] elects
//!   a leader on an etcd lease.
//! - `objects.rs`: the object rules both backends apply (keys, encoding, identity,
//!   preconditions).
//! - [`Error`] (in `error.rs`) says what failed and on which object.
//!
//! On sled every write gets the next revision, stored in the object's
//! `metadata.resourceVersion`; the counter is written in the same transaction as the
//! objects, so revisions keep increasing across restarts. On etcd the changes of one commit
//! share the transaction's revision.
//!
//! [`Kind`]: berth_proto::model::Kind
#![warn(missing_docs)]

mod backend;
mod election;
mod error;
mod etcd_store;
mod object_store;
mod objects;
mod sled_store;
#[cfg(feature = "testing")]
pub mod testing;

pub use backend::Backend;
pub use election::{ElectionConfig, Elector, FencedStore, Guard, Leadership, LocalElector};
pub use error::{Error, Result};
pub use etcd_store::{
    EtcdConfig, EtcdElector, EtcdStore, KEY_PREFIX, LEADER_KEY, MAX_FENCED_TXN_OPS,
    MAX_REQUEST_BYTES, MAX_TXN_OPS,
};
pub use object_store::{Change, ChangeType, ObjectStore, Op, Precondition};
pub use sled_store::{SledStore, CACHE_CAPACITY, CHANNEL_CAPACITY};
