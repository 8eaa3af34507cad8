//! The Alibaba OpenB GPU trace (cluster-trace-gpu-v2023): its node and task CSVs read into
//! typed records, and the two arrival orders a lab run can replay (lab.md): the FGD
//! artifact's (seeded shuffle, then sampled copies until 130% of GPU capacity) and the
//! trace's own creation and deletion times.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// A share of one GPU in thousandths: a whole GPU is 1,000.
pub const MILLI_GPU: u32 = 1000;

/// A machine of the trace (`openb_node_list_*.csv`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceNode {
    /// `sn`: the node's name.
    pub name: String,
    /// `cpu_milli`.
    pub cpu_milli: u64,
    /// `memory_mib`.
    pub memory_mib: u64,
    /// `gpu`: how many GPUs (0 to 8).
    pub gpus: u32,
    /// `model`: the GPU type, `None` for a CPU-only node.
    pub model: Option<String>,
}

/// A task of the trace (`openb_pod_list_*.csv`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceTask {
    /// `name`.
    pub name: String,
    /// `cpu_milli`.
    pub cpu_milli: u64,
    /// `memory_mib`.
    pub memory_mib: u64,
    /// `num_gpu`: how many GPUs (0 to 8).
    pub gpus: u32,
    /// `gpu_milli`: the share of each GPU it takes (below 1,000 only for a one-GPU task).
    pub gpu_milli: u32,
    /// `gpu_spec`: the GPU models it may run on, empty for any.
    pub gpu_spec: Vec<String>,
    /// `creation_time` in seconds, where the file has it.
    pub creation_time: Option<u64>,
    /// `deletion_time` in seconds, where the file has it.
    pub deletion_time: Option<u64>,
}

impl TraceTask {
    /// The GPU it asks for in all, in thousandths of a GPU (`k · d`).
    pub fn gpu_request(&self) -> u64 {
        u64::from(self.gpus) * u64::from(self.gpu_milli)
    }

    /// What it asks for, as the GPU policies see it.
    pub fn ask(&self) -> crate::gpushare::Ask {
        crate::gpushare::Ask {
            cpu_milli: self.cpu_milli,
            gpus: self.gpus,
            milli: if self.gpus == 0 { 0 } else { self.gpu_milli },
            models: self.gpu_spec.clone(),
        }
    }

    /// Whether it may run on a GPU of this model.
    pub fn allows_model(&self, model: Option<&str>) -> bool {
        self.gpu_spec.is_empty() || model.is_some_and(|m| self.gpu_spec.iter().any(|s| s == m))
    }
}

/// A trace file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A line does not hold what its column says.
    #[error("{path}:{line}: column {column}: {problem}")]
    Field {
        /// The file.
        path: String,
        /// The line, from 1 (the header is line 1).
        line: usize,
        /// The column's name.
        column: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// A CSV of the trace: the header names the columns; fields hold no commas or quotes.
struct Csv<'a> {
    path: &'a str,
    header: Vec<&'a str>,
    rows: Vec<(usize, Vec<&'a str>)>,
}

impl<'a> Csv<'a> {
    fn parse(path: &'a str, text: &'a str) -> Result<Self, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let header: Vec<&str> = match lines.next() {
            Some((_, l)) => l.split(',').map(str::trim).collect(),
            None => {
                return Err(TraceError::Field {
                    path: path.into(),
                    line: 1,
                    column: "header".into(),
                    problem: "the file is empty".into(),
                })
            }
        };
        let rows = lines
            .map(|(i, l)| (i + 1, l.split(',').map(str::trim).collect()))
            .collect();
        Ok(Csv { path, header, rows })
    }

    fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| *h == name)
    }

    fn required(&self, name: &str) -> Result<usize, TraceError> {
        self.column(name).ok_or_else(|| TraceError::Field {
            path: self.path.into(),
            line: 1,
            column: name.into(),
            problem: "missing from the header".into(),
        })
    }

    fn field<'r>(
        &self,
        row: &'r (usize, Vec<&'a str>),
        column: usize,
    ) -> Result<&'a str, TraceError> {
        row.1.get(column).copied().ok_or_else(|| TraceError::Field {
            path: self.path.into(),
            line: row.0,
            column: self.header[column].into(),
            problem: "the line has too few fields".into(),
        })
    }

    fn number(&self, row: &(usize, Vec<&'a str>), column: usize) -> Result<u64, TraceError> {
        let text = self.field(row, column)?;
        text.parse().map_err(|_| TraceError::Field {
            path: self.path.into(),
            line: row.0,
            column: self.header[column].into(),
            problem: format!("{text:?} is not a whole number"),
        })
    }

    fn optional_number(
        &self,
        row: &(usize, Vec<&'a str>),
        column: Option<usize>,
    ) -> Result<Option<u64>, TraceError> {
        match column {
            Some(c) if !self.field(row, c)?.is_empty() => self.number(row, c).map(Some),
            _ => Ok(None),
        }
    }

    fn bounded(
        &self,
        row: &(usize, Vec<&'a str>),
        column: usize,
        max: u64,
    ) -> Result<u32, TraceError> {
        let value = self.number(row, column)?;
        if value > max {
            return Err(TraceError::Field {
                path: self.path.into(),
                line: row.0,
                column: self.header[column].into(),
                problem: format!("{value} is more than {max}"),
            });
        }
        Ok(value as u32)
    }
}

fn read(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Reads a node list (`sn,cpu_milli,memory_mib,gpu,model`).
pub fn read_nodes(path: &Path) -> Result<Vec<TraceNode>, TraceError> {
    parse_nodes(&path.display().to_string(), &read(path)?)
}

/// Parses a node list; `path` names it in errors.
pub fn parse_nodes(path: &str, text: &str) -> Result<Vec<TraceNode>, TraceError> {
    let csv = Csv::parse(path, text)?;
    let (sn, cpu, mem, gpu) = (
        csv.required("sn")?,
        csv.required("cpu_milli")?,
        csv.required("memory_mib")?,
        csv.required("gpu")?,
    );
    let model = csv.column("model");
    csv.rows
        .iter()
        .map(|row| {
            let model = match model {
                Some(c) => Some(csv.field(row, c)?).filter(|m| !m.is_empty()),
                None => None,
            };
            Ok(TraceNode {
                name: csv.field(row, sn)?.to_string(),
                cpu_milli: csv.number(row, cpu)?,
                memory_mib: csv.number(row, mem)?,
                gpus: csv.bounded(row, gpu, 64)?,
                model: model.map(str::to_string),
            })
        })
        .collect()
}

/// Reads a task list (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]`).
pub fn read_tasks(path: &Path) -> Result<Vec<TraceTask>, TraceError> {
    parse_tasks(&path.display().to_string(), &read(path)?)
}

/// Parses a task list; `path` names it in errors.
pub fn parse_tasks(path: &str, text: &str) -> Result<Vec<TraceTask>, TraceError> {
    let csv = Csv::parse(path, text)?;
    let (name, cpu, mem, gpus, milli) = (
        csv.required("name")?,
        csv.required("cpu_milli")?,
        csv.required("memory_mib")?,
        csv.required("num_gpu")?,
        csv.required("gpu_milli")?,
    );
    let (spec, created, deleted) = (
        csv.column("gpu_spec"),
        csv.column("creation_time"),
        csv.column("deletion_time"),
    );
    csv.rows
        .iter()
        .map(|row| {
            let gpu_spec = match spec {
                Some(c) => csv
                    .field(row, c)?
                    .split('|')
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect(),
                None => Vec::new(),
            };
            let task = TraceTask {
                name: csv.field(row, name)?.to_string(),
                cpu_milli: csv.number(row, cpu)?,
                memory_mib: csv.number(row, mem)?,
                gpus: csv.bounded(row, gpus, 64)?,
                gpu_milli: csv.bounded(row, milli, u64::from(MILLI_GPU))?,
                gpu_spec,
                creation_time: csv.optional_number(row, created)?,
                deletion_time: csv.optional_number(row, deleted)?,
            };
            if task.gpus > 1 && task.gpu_milli != MILLI_GPU {
                return Err(TraceError::Field {
                    path: path.into(),
                    line: row.0,
                    column: "gpu_milli".into(),
                    problem: format!(
                        "a task of {} GPUs takes whole GPUs (1000), not {}",
                        task.gpus, task.gpu_milli
                    ),
                });
            }
            Ok(task)
        })
        .collect()
}

/// One task arriving in a replay: which task of the list, and (in trace time) when it
/// arrives and leaves, in seconds of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The index of the task in the list it came from.
    pub task: usize,
    /// When it arrives (trace time); the artifact's order has no times.
    pub at: Option<u64>,
    /// When it leaves (trace time); never in the artifact's order.
    pub leaves: Option<u64>,
}

/// The FGD artifact's arrival order (lab.md): the tasks sorted by name and shuffled with
/// the seed, then copies drawn uniformly with replacement from the name-sorted tasks,
/// appended in the order drawn, until the first draw whose GPU request would take the
/// running sum past `percent`% of `gpu_capacity_milli` (that draw is not added). Returns
/// indices into `tasks`.
pub fn artifact_arrivals(
    tasks: &[TraceTask],
    gpu_capacity_milli: u64,
    percent: u64,
    seed: u64,
) -> Vec<Arrival> {
    let mut sorted: Vec<usize> = (0..tasks.len()).collect();
    sorted.sort_by(|&a, &b| tasks[a].name.cmp(&tasks[b].name));
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut order = sorted.clone();
    order.shuffle(&mut rng);
    let limit = gpu_capacity_milli * percent / 100;
    let mut total: u64 = order.iter().map(|&t| tasks[t].gpu_request()).sum();
    if !sorted.is_empty() {
        loop {
            let draw = sorted[rng.random_range(0..sorted.len())];
            let task = &tasks[draw];
            if total + u64::from(task.gpu_milli) > limit {
                break;
            }
            total += task.gpu_request();
            order.push(draw);
        }
    }
    order
        .into_iter()
        .map(|task| Arrival {
            task,
            at: None,
            leaves: None,
        })
        .collect()
}

/// The trace's own times: every task with a creation time, in creation order (ties by
/// name), leaving at its deletion time where it has one.
pub fn trace_arrivals(tasks: &[TraceTask]) -> Vec<Arrival> {
    let mut order: Vec<usize> = (0..tasks.len())
        .filter(|&t| tasks[t].creation_time.is_some())
        .collect();
    order.sort_by(|&a, &b| {
        (tasks[a].creation_time, &tasks[a].name).cmp(&(tasks[b].creation_time, &tasks[b].name))
    });
    order
        .into_iter()
        .map(|task| Arrival {
            task,
            at: tasks[task].creation_time,
            leaves: tasks[task].deletion_time,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASKS: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
        b,4000,1024,1,500,,LS,Running,10,20,10\n\
        a,8000,2048,2,1000,T4|V100M16,LS,Running,5,,5\n\
        c,1000,512,0,0,,BE,Running,,,\n";

    #[test]
    fn tasks_parse_with_their_optional_columns() {
        let tasks = parse_tasks("t.csv", TASKS).unwrap();
        assert_eq!(tasks.len(), 3);
        assert_eq!(tasks[1].gpu_spec, vec!["T4", "V100M16"]);
        assert_eq!(tasks[1].gpu_request(), 2000);
        assert_eq!(tasks[0].deletion_time, Some(20));
        assert_eq!(tasks[1].deletion_time, None);
        assert!(tasks[1].allows_model(Some("T4")));
        assert!(!tasks[1].allows_model(Some("P100")));
        assert!(tasks[0].allows_model(None));
        // The multigpu50 list has only the first five columns.
        let short = parse_tasks(
            "m.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,2,1,300\n",
        )
        .unwrap();
        assert_eq!(short[0].gpu_milli, 300);
        assert!(short[0].gpu_spec.is_empty());
    }

    #[test]
    fn bad_fields_name_the_file_line_and_column() {
        let cases = [
            (
                "name,cpu_milli,memory_mib,num_gpu\nx,1,2,1\n",
                "t.csv:1: column gpu_milli: missing from the header",
            ),
            (
                "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,lots,1,300\n",
                "t.csv:2: column memory_mib: \"lots\" is not a whole number",
            ),
            (
                "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,2,1,1300\n",
                "t.csv:2: column gpu_milli: 1300 is more than 1000",
            ),
            (
                "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,2,2,500\n",
                "t.csv:2: column gpu_milli: a task of 2 GPUs takes whole GPUs (1000), not 500",
            ),
            (
                "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,2\n",
                "t.csv:2: column num_gpu: the line has too few fields",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_tasks("t.csv", text).unwrap_err().to_string(), want);
        }
    }

    #[test]
    fn nodes_parse_and_cpu_only_nodes_have_no_model() {
        let nodes = parse_nodes(
            "n.csv",
            "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,32000,1024,0,\n",
        )
        .unwrap();
        assert_eq!(nodes[0].model.as_deref(), Some("P100"));
        assert_eq!(nodes[1].model, None);
        assert_eq!(nodes[1].gpus, 0);
    }

    #[test]
    fn artifact_arrivals_shuffle_then_sample_until_the_limit() {
        let tasks = parse_tasks("t.csv", TASKS).unwrap();
        // Capacity 4 GPUs; the originals ask 2.5; sampling stops before passing 130% = 5.2.
        let a = artifact_arrivals(&tasks, 4000, 130, 42);
        let b = artifact_arrivals(&tasks, 4000, 130, 42);
        assert_eq!(a, b, "the same seed gives the same order");
        let mut originals: Vec<usize> = a[..3].iter().map(|x| x.task).collect();
        originals.sort();
        assert_eq!(
            originals,
            vec![0, 1, 2],
            "every task arrives once before the copies"
        );
        let total: u64 = a.iter().map(|x| tasks[x.task].gpu_request()).sum();
        assert!(total <= 5200 + 1000, "{total}");
        assert!(a.len() > 3);
        assert_ne!(
            artifact_arrivals(&tasks, 40_000, 130, 1),
            artifact_arrivals(&tasks, 40_000, 130, 2)
        );
    }

    #[test]
    fn trace_arrivals_follow_creation_time() {
        let tasks = parse_tasks("t.csv", TASKS).unwrap();
        let order = trace_arrivals(&tasks);
        assert_eq!(order.iter().map(|a| a.task).collect::<Vec<_>>(), vec![1, 0]);
        assert_eq!(order[1].leaves, Some(20));
    }
}
