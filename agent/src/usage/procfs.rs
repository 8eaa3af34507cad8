//! Readers of the kernel's accounting files: /proc/meminfo, /proc/stat, the per-process
//! `stat` and `status` files (for usage summed over a process tree), `statvfs` of a
//! folder, and folder sizes.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// `MemTotal` and `MemAvailable`, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemInfo {
    /// `MemTotal`.
    pub total: i64,
    /// `MemAvailable`.
    pub available: i64,
}

/// Reads /proc/meminfo.
pub fn read_meminfo() -> std::io::Result<MemInfo> {
    Ok(parse_meminfo(&std::fs::read_to_string("/proc/meminfo")?))
}

/// Parses the text of /proc/meminfo (`kB` means KiB); missing fields are zero.
pub fn parse_meminfo(text: &str) -> MemInfo {
    let field = |name: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<i64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    MemInfo {
        total: field("MemTotal:"),
        available: field("MemAvailable:"),
    }
}

/// Free bytes (for unprivileged users) and size of the filesystem holding `path`.
pub fn statvfs(path: &Path) -> std::io::Result<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stat: libc::statvfs = unsafe {
        // SAFETY: statvfs is plain old data; an all-zero value is valid and is overwritten.
        std::mem::zeroed()
    };
    // SAFETY: c_path is a valid NUL-terminated string and stat a valid out pointer.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let block = stat.f_frsize as i64;
    Ok((
        (stat.f_bavail as i64).saturating_mul(block),
        (stat.f_blocks as i64).saturating_mul(block),
    ))
}

/// The kernel's pid limit (`/proc/sys/kernel/pid_max`).
pub fn pid_max() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Processes that run on the machine (numeric entries of /proc).
pub fn process_count() -> i64 {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                })
                .count() as i64
        })
        .unwrap_or(0)
}

/// Clock ticks per second, for the tick counts of /proc.
fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

/// Converts `ticks` of CPU time over `elapsed` wall time into millicores.
pub fn millicores(ticks: u64, elapsed: Duration) -> i64 {
    let nanos = elapsed.as_nanos();
    if nanos == 0 {
        return 0;
    }
    let cpu_nanos = u128::from(ticks) * 1_000_000_000 / u128::from(ticks_per_second());
    i64::try_from(cpu_nanos * 1000 / nanos).unwrap_or(i64::MAX)
}

/// Busy ticks of all CPUs since boot: the first line of /proc/stat without idle and
/// iowait.
pub fn busy_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Some(total.saturating_sub(idle))
}

/// One process as the usage of a process tree needs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Parent pid.
    pub ppid: u32,
    /// Resident set size, bytes.
    pub rss_bytes: i64,
    /// User plus system CPU time, in clock ticks.
    pub cpu_ticks: u64,
}

/// Parses `/proc/<pid>/stat`: the parent pid and utime+stime. The command name may hold
/// spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_stat(text: &str) -> Option<(u32, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12).
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

/// `VmRSS` of a `/proc/<pid>/status` text, in bytes (zero for kernel threads).
pub fn parse_status_rss(text: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<i64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Every process of the machine, by pid.
pub fn process_table() -> HashMap<u32, ProcessInfo> {
    let mut table = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return table;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let Some((ppid, cpu_ticks)) = std::fs::read_to_string(path.join("stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        else {
            continue; // gone meanwhile
        };
        let rss_bytes = std::fs::read_to_string(path.join("status"))
            .map(|t| parse_status_rss(&t))
            .unwrap_or(0);
        table.insert(
            pid,
            ProcessInfo {
                ppid,
                rss_bytes,
                cpu_ticks,
            },
        );
    }
    table
}

/// The pids of the tree rooted at `root`: the process and all its descendants (none when
/// the root is gone).
pub fn tree_pids(table: &HashMap<u32, ProcessInfo>, root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (pid, info) in table {
        children.entry(info.ppid).or_default().push(*pid);
    }
    let mut pids = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        if !table.contains_key(&pid) {
            continue;
        }
        pids.push(pid);
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids);
        }
    }
    pids
}

/// Usage of the tree rooted at `root` (the process and all its descendants): summed RSS,
/// summed CPU ticks, and the number of processes. Zero when the root is gone.
pub fn tree_usage(table: &HashMap<u32, ProcessInfo>, root: u32) -> (i64, u64, i64) {
    let (mut rss, mut ticks, mut count) = (0, 0, 0);
    for pid in tree_pids(table, root) {
        let info = &table[&pid];
        rss += info.rss_bytes;
        ticks += info.cpu_ticks;
        count += 1;
    }
    (rss, ticks, count)
}

/// Total size of the files under `path`, bytes (zero if it does not exist).
pub fn dir_size(path: &Path) -> i64 {
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len() as i64,
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_files() {
        struct Case {
            name: &'static str,
            stat: &'static str,
            want: Option<(u32, u64)>,
        }
        let cases = [
            Case {
                name: "plain",
                stat: "42 (sh) S 7 42 42 0 -1 4194560 100 0 0 0 15 5 0 0 20 0 1 0 100 1000 10",
                want: Some((7, 20)),
            },
            Case {
                name: "name with spaces and parentheses",
                stat: "43 (a (b) c) R 1 43 43 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 1 1",
                want: Some((1, 7)),
            },
            Case {
                name: "truncated",
                stat: "44 (x) S 1",
                want: None,
            },
        ];
        for case in cases {
            assert_eq!(parse_stat(case.stat), case.want, "{}", case.name);
        }
        assert_eq!(
            parse_status_rss("Name:\tsh\nVmRSS:\t    1024 kB\n"),
            1024 * 1024
        );
        assert_eq!(parse_status_rss("Name:\tkthreadd\n"), 0);
        assert_eq!(
            parse_meminfo("MemTotal: 2048 kB\nMemFree: 1 kB\nMemAvailable: 1024 kB\n"),
            MemInfo {
                total: 2048 * 1024,
                available: 1024 * 1024
            }
        );
    }

    #[test]
    fn tree_usage_sums_descendants() {
        let info = |ppid, rss_bytes, cpu_ticks| ProcessInfo {
            ppid,
            rss_bytes,
            cpu_ticks,
        };
        let table: HashMap<u32, ProcessInfo> = [
            (1, info(0, 1, 1)),
            (10, info(1, 100, 10)),
            (11, info(10, 50, 5)),
            (12, info(11, 25, 1)),
            (20, info(1, 1000, 100)),
        ]
        .into_iter()
        .collect();
        struct Case {
            name: &'static str,
            root: u32,
            want: (i64, u64, i64),
        }
        let cases = [
            Case {
                name: "subtree",
                root: 10,
                want: (175, 16, 3),
            },
            Case {
                name: "leaf",
                root: 20,
                want: (1000, 100, 1),
            },
            Case {
                name: "gone",
                root: 99,
                want: (0, 0, 0),
            },
        ];
        for case in cases {
            assert_eq!(tree_usage(&table, case.root), case.want, "{}", case.name);
        }
    }

    #[test]
    fn millicores_from_ticks() {
        let per_second = ticks_per_second();
        assert_eq!(millicores(per_second, Duration::from_secs(1)), 1000);
        assert_eq!(millicores(per_second / 2, Duration::from_secs(2)), 250);
        assert_eq!(millicores(5, Duration::ZERO), 0);
    }
}
