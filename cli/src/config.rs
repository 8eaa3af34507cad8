//! Where the CLI finds the scheduler: the `--server` flag, `BERTH_SERVER`, the client config
//! file that `berth dev` writes, or the default address.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Address used when nothing else names one.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:7070";
/// Environment variable naming the server (read through the `--server` flag's `env`).
pub const SERVER_ENV: &str = "BERTH_SERVER";
/// Environment variable naming the client config file.
pub const CONFIG_ENV: &str = "BERTH_CONFIG";

/// The client config file (`~/.berth/config`), YAML: `server: http://127.0.0.1:7070`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientConfig {
    /// Address of the scheduler's API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// Failure to read or write the client config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("reading client config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid YAML of the expected shape.
    #[error("parsing client config {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The YAML error.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// The file or its folder cannot be written.
    #[error("writing client config {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
}

/// The client config file: `$BERTH_CONFIG` if set, else `~/.berth/config` (or
/// `.berth/config` under the working directory when there is no home directory).
pub fn config_path() -> PathBuf {
    if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join(".berth").join("config")
}

/// Reads the client config at `path`; a missing file is `Ok(None)`.
pub fn read_config(path: &Path) -> Result<Option<ClientConfig>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    if text.trim().is_empty() {
        return Ok(Some(ClientConfig::default()));
    }
    serde_yaml_ng::from_str(&text)
        .map(Some)
        .map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })
}

/// Writes a client config naming `server` to `path`, creating its folder. The file is
/// written beside its final name and renamed into place, so a reader never sees half of it.
/// `berth dev` calls this once its scheduler listens.
pub fn write_config(path: &Path, server: &str) -> Result<(), ConfigError> {
    let write_err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(write_err)?;
    }
    let config = ClientConfig {
        server: Some(normalize_server(server)),
    };
    let text = serde_yaml_ng::to_string(&config).expect("a struct of strings serializes");
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(write_err)?;
    std::fs::rename(&tmp, path).map_err(write_err)
}

/// Adds `http://` to an address written as `host:port`.
pub fn normalize_server(server: &str) -> String {
    let server = server.trim();
    if server.contains("://") {
        server.to_string()
    } else {
        format!("http://{server}")
    }
}

/// The server to talk to: `flag` (the `--server` flag, or `BERTH_SERVER` which clap folds
/// into it), else the config file's `server`, else [`DEFAULT_SERVER`]; normalized by
/// [`normalize_server`].
pub fn resolve_server(flag: Option<&str>) -> Result<String, ConfigError> {
    if let Some(server) = flag.filter(|s| !s.trim().is_empty()) {
        return Ok(normalize_server(server));
    }
    let from_file = read_config(&config_path())?.and_then(|c| c.server);
    Ok(choose_server(None, from_file.as_deref()))
}

/// The precedence rule of [`resolve_server`] without the file system.
fn choose_server(flag: Option<&str>, from_file: Option<&str>) -> String {
    flag.or(from_file)
        .filter(|s| !s.trim().is_empty())
        .map_or_else(|| DEFAULT_SERVER.to_string(), normalize_server)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_precedence_and_normalization() {
        struct Case {
            name: &'static str,
            flag: Option<&'static str>,
            file: Option<&'static str>,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "default",
                flag: None,
                file: None,
                want: DEFAULT_SERVER,
            },
            Case {
                name: "file",
                flag: None,
                file: Some("http://10.0.0.1:7070"),
                want: "http://10.0.0.1:7070",
            },
            Case {
                name: "flag wins",
                flag: Some("10.0.0.2:9000"),
                file: Some("http://10.0.0.1:7070"),
                want: "http://10.0.0.2:9000",
            },
            Case {
                name: "file without scheme",
                flag: None,
                file: Some("localhost:7171"),
                want: "http://localhost:7171",
            },
            Case {
                name: "https kept",
                flag: Some("https://berth.example:443"),
                file: None,
                want: "https://berth.example:443",
            },
            Case {
                name: "blank file entry",
                flag: None,
                file: Some(" "),
                want: DEFAULT_SERVER,
            },
        ];
        for case in cases {
            assert_eq!(
                choose_server(case.flag, case.file),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn config_round_trips_and_tolerates_missing_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("nested").join("config");
        assert_eq!(read_config(&path).expect("missing file is fine"), None);
        write_config(&path, "127.0.0.1:7171").expect("write");
        let text = std::fs::read_to_string(&path).expect("read back");
        assert_eq!(text, "server: http://127.0.0.1:7171\n");
        let config = read_config(&path).expect("read").expect("present");
        assert_eq!(config.server.as_deref(), Some("http://127.0.0.1:7171"));

        std::fs::write(&path, "server: [not, a, string]\n").expect("write");
        let err = read_config(&path).expect_err("bad shape");
        assert!(
            err.to_string().starts_with("parsing client config"),
            "{err}"
        );
    }
}
