//! Reading a scheduler's Prometheus endpoint (`--metrics-listen`): one plain HTTP/1.1 GET,
//! and the value of one series in the text format. For `berth bench --e2e` and the tests;
//! a scrape is one short request, so no HTTP client library is needed.

use std::io::{Read, Write};
use std::time::Duration;

/// How long a scrape may take before it fails.
const TIMEOUT: Duration = Duration::from_secs(30);

/// `GET path` on `addr` (`127.0.0.1:9090`), with `authorization: Bearer TOKEN` when a token
/// is given: the status code and the body.
pub fn get(addr: &str, path: &str, token: Option<&str>) -> std::io::Result<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_string()))
}

/// The value of `series`, written as in the text format (`name` or `name{label="v",...}`
/// with the labels in the order the exporter prints them); None when absent.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_by_series() {
        let text = "# TYPE a summary\na{quantile=\"0.5\"} 0.25\na{quantile=\"0.99\"} 1e-3\na_count 7\nab 9\n";
        let cases = [
            ("a labelled series", "a{quantile=\"0.5\"}", Some(0.25)),
            ("an exponent", "a{quantile=\"0.99\"}", Some(0.001)),
            ("a plain series", "a_count", Some(7.0)),
            ("a prefix of another name is not it", "a", None),
            ("absent", "b", None),
        ];
        for (name, series, want) in cases {
            assert_eq!(sample(text, series), want, "{name}");
        }
    }
}
