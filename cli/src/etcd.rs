//! Local etcd clusters on loopback, for `berth dev --ha` and the HA tests: finding the
//! `etcd` binary (with a clear error naming Debian's package), choosing each member's
//! ports and data folder, the command line that makes the members one cluster, the
//! `--store` URL that reaches them, and their health.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The Debian package that installs `etcd` (3.4, v3 API).
pub const DEBIAN_PACKAGE: &str = "etcd-server";

/// Why a local etcd cluster cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// No `etcd` binary on the PATH.
    #[error(
        "`etcd` is not on the PATH: install it (Debian/Ubuntu: `apt-get install {DEBIAN_PACKAGE}`) or put its folder on the PATH"
    )]
    NotFound,
    /// No free loopback port could be had.
    #[error("finding a free loopback port for etcd: {0}")]
    Port(#[source] std::io::Error),
}

/// The `etcd` binary on the PATH.
pub fn find_etcd() -> Result<PathBuf, EtcdError> {
    let path = std::env::var_os("PATH").ok_or(EtcdError::NotFound)?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| is_executable(candidate))
        .ok_or(EtcdError::NotFound)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One member of a local etcd cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdMember {
    /// Its name in the cluster (`etcd-1`).
    pub name: String,
    /// Where clients reach it.
    pub client: SocketAddr,
    /// Where the other members reach it.
    pub peer: SocketAddr,
    /// Its data folder.
    pub data_dir: PathBuf,
}

/// `count` members with free loopback ports, their data in `dir/etcd-N`.
pub fn plan(count: usize, dir: &Path) -> Result<Vec<EtcdMember>, EtcdError> {
    (1..=count)
        .map(|i| {
            Ok(EtcdMember {
                name: format!("etcd-{i}"),
                client: free_address()?,
                peer: free_address()?,
                data_dir: dir.join(format!("etcd-{i}")),
            })
        })
        .collect()
}

fn free_address() -> Result<SocketAddr, EtcdError> {
    berth_proto::ports::spare_loopback_address().map_err(EtcdError::Port)
}

impl EtcdMember {
    /// The flags that start this member as part of `cluster` (a new cluster; a member
    /// restarted on its data folder rejoins it).
    pub fn args(&self, cluster: &[EtcdMember]) -> Vec<String> {
        let initial: Vec<String> = cluster
            .iter()
            .map(|m| format!("{}=http://{}", m.name, m.peer))
            .collect();
        vec![
            "--name".into(),
            self.name.clone(),
            "--data-dir".into(),
            self.data_dir.display().to_string(),
            "--listen-client-urls".into(),
            format!("http://{}", self.client),
            "--advertise-client-urls".into(),
            format!("http://{}", self.client),
            "--listen-peer-urls".into(),
            format!("http://{}", self.peer),
            "--initial-advertise-peer-urls".into(),
            format!("http://{}", self.peer),
            "--initial-cluster".into(),
            initial.join(","),
            "--initial-cluster-state".into(),
            "new".into(),
            "--initial-cluster-token".into(),
            "berth-dev".into(),
        ]
    }

    /// Whether the member says it is healthy (it has a leader and answers): `GET /health`.
    pub fn is_healthy(&self) -> bool {
        crate::scrape::get(&self.client.to_string(), "/health", None)
            .is_ok_and(|(status, body)| status == 200 && body.contains("\"health\":\"true\""))
    }
}

/// The `--store` URL reaching every member: `etcd://127.0.0.1:P1,127.0.0.1:P2,...`.
pub fn store_url(cluster: &[EtcdMember]) -> String {
    let clients: Vec<String> = cluster.iter().map(|m| m.client.to_string()).collect();
    format!("etcd://{}", clients.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_form_one_cluster_and_the_url_names_them_all() {
        let dir = Path::new("/tmp/berth-dev");
        let cluster = plan(3, dir).expect("ports");
        let names: Vec<&str> = cluster.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["etcd-1", "etcd-2", "etcd-3"]);
        let args = cluster[1].args(&cluster);
        let flag = |name: &str| {
            let i = args.iter().position(|a| a == name).expect(name);
            args[i + 1].clone()
        };
        assert_eq!(flag("--name"), "etcd-2");
        assert_eq!(flag("--data-dir"), "/tmp/berth-dev/etcd-2");
        assert_eq!(
            flag("--listen-client-urls"),
            format!("http://{}", cluster[1].client)
        );
        assert_eq!(
            flag("--initial-cluster"),
            format!(
                "etcd-1=http://{},etcd-2=http://{},etcd-3=http://{}",
                cluster[0].peer, cluster[1].peer, cluster[2].peer
            )
        );
        assert_eq!(
            store_url(&cluster),
            format!(
                "etcd://{},{},{}",
                cluster[0].client, cluster[1].client, cluster[2].client
            )
        );
    }

    #[test]
    fn a_missing_etcd_names_the_debian_package() {
        assert!(EtcdError::NotFound
            .to_string()
            .contains("apt-get install etcd-server"));
    }
}
