//! Loopback ports for the servers Berth starts (and its tests start) as child processes.
//!
//! The usual trick, binding port 0 and letting go, hands out a port from the kernel's
//! ephemeral range: the same range every outgoing connection takes its source port from.
//! Between the pick and the child's own bind, any connection on the machine (an etcd
//! member dialing its peers, a gRPC client) may take that port, and the child then fails
//! with "address already in use". So ports are picked below that range, where only
//! explicit binds go, and each one is checked free by binding it.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the kernel's ephemeral range starts when /proc does not say (Linux's default).
const EPHEMERAL_LOW_DEFAULT: u16 = 32_768;
/// The lowest port picked: above the well-known and most registered services.
const FLOOR: u16 = 10_000;

/// Candidates drawn so far in this process. Each candidate is drawn once (until the draws
/// wrap around the range, some 20,000 of them), so threads of one process (parallel tests)
/// do not get the same port.
static DRAWN: AtomicU32 = AtomicU32::new(0);

/// A loopback address with a port nothing is bound to, outside the ephemeral range (in it
/// only when the range leaves no room below it).
pub fn spare_loopback_address() -> std::io::Result<SocketAddr> {
    let low = ephemeral_low().unwrap_or(EPHEMERAL_LOW_DEFAULT);
    if low > FLOOR {
        let span = u32::from(low - FLOOR);
        // Processes start at different places (by pid), so that two of them picking at
        // the same moment rarely meet.
        let start = std::process::id().wrapping_mul(7_919);
        for _ in 0..512 {
            let drawn = DRAWN.fetch_add(1, Ordering::Relaxed);
            let port = FLOOR + (start.wrapping_add(drawn) % span) as u16;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            if TcpListener::bind(addr).is_ok() {
                return Ok(addr);
            }
        }
    }
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()
}

/// [`spare_loopback_address`]'s port.
pub fn spare_loopback_port() -> std::io::Result<u16> {
    spare_loopback_address().map(|a| a.port())
}

/// The first port of Linux's ephemeral range (`net.ipv4.ip_local_port_range`).
fn ephemeral_low() -> Option<u16> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_free_distinct_and_below_the_ephemeral_range() {
        let low = ephemeral_low().unwrap_or(EPHEMERAL_LOW_DEFAULT);
        let picks: Vec<u16> = (0..64)
            .map(|_| spare_loopback_port().expect("a port"))
            .collect();
        let mut distinct = picks.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), picks.len(), "{picks:?}");
        if low > FLOOR {
            assert!(
                picks.iter().all(|&p| (FLOOR..low).contains(&p)),
                "{picks:?}"
            );
        }
        for port in picks {
            TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("the picked port is free");
        }
    }

    #[test]
    fn a_bound_port_is_passed_over() {
        let held = TcpListener::bind(spare_loopback_address().expect("a port")).expect("bind");
        let taken = held.local_addr().expect("address").port();
        for _ in 0..200 {
            assert_ne!(spare_loopback_port().expect("a port"), taken);
        }
    }
}
