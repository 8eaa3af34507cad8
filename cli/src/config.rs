//! Where the CLI finds the scheduler and how it proves who it is: the `--server`, `--token`
//! and `--ca` flags (or `BERTH_SERVER`, `BERTH_TOKEN`, `BERTH_CA`), else the client config
//! file that `berth dev` writes, else the default address (no token, no TLS).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Address used when nothing else names one.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:7070";
/// Environment variable naming the server (read through the `--server` flag's `env`).
pub const SERVER_ENV: &str = "BERTH_SERVER";
/// Environment variable naming the client config file.
pub const CONFIG_ENV: &str = "BERTH_CONFIG";
/// Environment variable holding the bearer token (read through the `--token` flag's `env`).
pub const TOKEN_ENV: &str = "BERTH_TOKEN";
/// Environment variable naming the CA file (read through the `--ca` flag's `env`).
pub const CA_ENV: &str = "BERTH_CA";

/// The client config file (`~/.berth/config`), YAML: `server: http://127.0.0.1:7070`, and
/// optionally `token:` (a bearer token) and `ca:` (a PEM file of the CA that signed the
/// server's certificate).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientConfig {
    /// Address of the scheduler's API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Bearer token sent with every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// CA certificate file (PEM) that the server's TLS certificate must chain to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
}

/// Where and how to reach the scheduler, once flags, environment and file are merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The address, with its scheme (`https://` when a CA is set and none was written); a
    /// comma-separated list when several replicas serve the API.
    pub server: String,
    /// Bearer token, if any.
    pub token: Option<String>,
    /// CA file, if any.
    pub ca: Option<PathBuf>,
}

impl Target {
    /// The replicas' addresses, in the order written.
    pub fn servers(&self) -> Vec<&str> {
        split_servers(&self.server).collect()
    }

    /// The same credentials, for the one address `server`.
    pub fn at(&self, server: &str) -> Target {
        Target {
            server: server.to_string(),
            ..self.clone()
        }
    }
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

/// Writes a client config naming `server` to `path`; see [`write_client_config`].
pub fn write_config(path: &Path, server: &str) -> Result<(), ConfigError> {
    write_client_config(
        path,
        &ClientConfig {
            server: Some(server.to_string()),
            ..ClientConfig::default()
        },
    )
}

/// Writes a client config to `path`, creating its folder; the server address is
/// normalized. The file is written beside its final name, readable by its owner only (it
/// may hold a token), and renamed into place, so a reader never sees half of it. `berth
/// dev` calls this once its scheduler listens.
pub fn write_client_config(path: &Path, config: &ClientConfig) -> Result<(), ConfigError> {
    let write_err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(write_err)?;
    }
    let mut config = config.clone();
    config.server = config.server.as_deref().map(normalize_server);
    let text = serde_yaml_ng::to_string(&config).expect("a struct of strings serializes");
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    write_private(&tmp, text.as_bytes()).map_err(write_err)?;
    std::fs::rename(&tmp, path).map_err(write_err)
}

/// Writes a file that only its owner may read (mode 0600 on Unix), replacing it.
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// Adds `http://` to an address written as `host:port`; in a comma-separated list of
/// replicas' addresses (`host:7070,host:7071`), to each, dropping empty entries.
pub fn normalize_server(server: &str) -> String {
    with_scheme(server, "http")
}

/// Each address of a comma-separated list, trimmed, with `scheme://` added where none is
/// written; the list joined again with commas.
fn with_scheme(servers: &str, scheme: &str) -> String {
    split_servers(servers)
        .map(|s| {
            if s.contains("://") {
                s.to_string()
            } else {
                format!("{scheme}://{s}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The addresses of a comma-separated list, trimmed, without empty entries.
fn split_servers(servers: &str) -> impl Iterator<Item = &str> {
    servers.split(',').map(str::trim).filter(|s| !s.is_empty())
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

/// The server, token and CA to use: each from its flag (which clap fills from the
/// environment too) if given, else from the config file, else the default (no token, no
/// TLS). An address without a scheme is https when a CA is set.
pub fn resolve_target(
    server: Option<&str>,
    token: Option<&str>,
    ca: Option<&Path>,
) -> Result<Target, ConfigError> {
    let file = read_config(&config_path())?.unwrap_or_default();
    Ok(choose_target(server, token, ca, &file))
}

/// The precedence rule of [`resolve_target`] without the file system.
fn choose_target(
    server: Option<&str>,
    token: Option<&str>,
    ca: Option<&Path>,
    file: &ClientConfig,
) -> Target {
    let blank = |s: &&str| s.trim().is_empty();
    let ca = ca
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .or_else(|| file.ca.clone());
    let server = server
        .filter(|s| !blank(s))
        .or(file.server.as_deref().filter(|s| !blank(s)));
    let server = match (server, &ca) {
        (Some(s), Some(_)) => with_scheme(s, "https"),
        (Some(s), None) => normalize_server(s),
        (None, _) => DEFAULT_SERVER.to_string(),
    };
    let token = token
        .filter(|t| !blank(t))
        .or(file.token.as_deref().filter(|t| !blank(t)))
        .map(|t| t.trim().to_string());
    Target { server, token, ca }
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
                name: "replicas",
                flag: Some("127.0.0.1:7070, http://127.0.0.1:7071,,"),
                file: None,
                want: "http://127.0.0.1:7070,http://127.0.0.1:7071",
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
    fn target_precedence() {
        struct Case {
            name: &'static str,
            server: Option<&'static str>,
            token: Option<&'static str>,
            ca: Option<&'static str>,
            file: ClientConfig,
            want: Target,
        }
        let file = ClientConfig {
            server: Some("https://127.0.0.1:7171".into()),
            token: Some("file-token".into()),
            ca: Some("/dev/ca.pem".into()),
        };
        let target = |server: &str, token: Option<&str>, ca: Option<&str>| Target {
            server: server.into(),
            token: token.map(Into::into),
            ca: ca.map(Into::into),
        };
        let cases = [
            Case {
                name: "nothing anywhere",
                server: None,
                token: None,
                ca: None,
                file: ClientConfig::default(),
                want: target(DEFAULT_SERVER, None, None),
            },
            Case {
                name: "all from the file",
                server: None,
                token: None,
                ca: None,
                file: file.clone(),
                want: target(
                    "https://127.0.0.1:7171",
                    Some("file-token"),
                    Some("/dev/ca.pem"),
                ),
            },
            Case {
                name: "flags win field by field",
                server: None,
                token: Some("flag-token"),
                ca: None,
                file: file.clone(),
                want: target(
                    "https://127.0.0.1:7171",
                    Some("flag-token"),
                    Some("/dev/ca.pem"),
                ),
            },
            Case {
                name: "a CA makes a bare address https",
                server: Some("10.0.0.1:7070"),
                token: None,
                ca: Some("/etc/berth/ca.pem"),
                file: ClientConfig::default(),
                want: target("https://10.0.0.1:7070", None, Some("/etc/berth/ca.pem")),
            },
            Case {
                name: "a CA makes each bare replica address https",
                server: Some("10.0.0.1:7070,http://10.0.0.2:7070"),
                token: None,
                ca: Some("/etc/berth/ca.pem"),
                file: ClientConfig::default(),
                want: target(
                    "https://10.0.0.1:7070,http://10.0.0.2:7070",
                    None,
                    Some("/etc/berth/ca.pem"),
                ),
            },
            Case {
                name: "an explicit scheme is kept",
                server: Some("http://10.0.0.1:7070"),
                token: Some(" t "),
                ca: None,
                file: ClientConfig::default(),
                want: target("http://10.0.0.1:7070", Some("t"), None),
            },
            Case {
                name: "blank values are absent",
                server: Some(" "),
                token: Some(""),
                ca: Some(""),
                file: ClientConfig::default(),
                want: target(DEFAULT_SERVER, None, None),
            },
        ];
        for case in cases {
            let got = choose_target(case.server, case.token, case.ca.map(Path::new), &case.file);
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn client_config_with_credentials_is_private_and_round_trips() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config");
        let config = ClientConfig {
            server: Some("127.0.0.1:7171".into()),
            token: Some("secret".into()),
            ca: Some(dir.path().join("ca.pem")),
        };
        write_client_config(&path, &config).expect("write");
        let read = read_config(&path).expect("read").expect("present");
        assert_eq!(read.server.as_deref(), Some("http://127.0.0.1:7171"));
        assert_eq!(read.token.as_deref(), Some("secret"));
        assert_eq!(read.ca, config.ca);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "a config with a token is private");
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
