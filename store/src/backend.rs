//! [`Backend`]: the store a server runs on, chosen by its flags (`--store etcd://...` or the
//! embedded sled store in `--data-dir`), with the elector that belongs to it.

use std::path::Path;
use std::sync::Arc;

use crate::{
    ElectionConfig, Elector, EtcdConfig, EtcdStore, LocalElector, ObjectStore, Result, SledStore,
};

/// An opened store and what kind it is.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The embedded store: one process owns its folder.
    Sled(Arc<SledStore>),
    /// An etcd cluster, shared by every replica.
    Etcd(Arc<EtcdStore>),
}

impl Backend {
    /// Connects to etcd when `store` is an `etcd://HOST:PORT,...` URL, else opens (and
    /// creates) the sled store in `data_dir`.
    pub fn open(store: Option<&str>, data_dir: &Path) -> Result<Self> {
        match store {
            Some(url) => Ok(Backend::Etcd(Arc::new(EtcdStore::connect(
                EtcdConfig::from_url(url)?,
            )?))),
            None => Ok(Backend::Sled(Arc::new(SledStore::open(data_dir)?))),
        }
    }

    /// The store, as the rest of Berth holds it.
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        match self {
            Backend::Sled(s) => s.clone(),
            Backend::Etcd(s) => s.clone(),
        }
    }

    /// An elector for this store's replicas: an etcd lease for etcd (with `config`'s
    /// timing), the in-process elector for sled (which grants at once; call this once per
    /// process).
    pub fn elector(&self, config: ElectionConfig) -> Arc<dyn Elector> {
        match self {
            Backend::Sled(_) => Arc::new(LocalElector::new()),
            Backend::Etcd(s) => Arc::new(s.elector(config)),
        }
    }
}
