#[cfg(test)]
mod probe {
    use std::sync::Arc;
    use std::time::Instant;
    use berth_proto::model::Object;
    use berth_store::{ObjectStore, Op, Precondition, SledStore};
    use crate::perf::workloads::*;

    #[test]
    #[ignore]
    fn store_probe() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(&dir.path().join("s")).unwrap());
        let w = Workload::new(WorkloadName::SchedulingBasic);
        let pods: Vec<Object> = (0..10000).map(|i| {
            let mut p = w.measured.pod(i);
            p.spec.scheduler_name = "default-scheduler".into();
            Object::Pod(p)
        }).collect();
        let t = Instant::now();
        let mut created = Vec::new();
        for chunk in pods.chunks(500) {
            let ch = store.commit(chunk.iter().cloned().map(Op::Create).collect()).unwrap();
            created.extend(ch.into_iter().map(|c| c.object));
        }
        eprintln!("create 10000: {:?}", t.elapsed());
        let t = Instant::now();
        for chunk in created.chunks(512) {
            let ops: Vec<Op> = chunk.iter().map(|o| {
                let Object::Pod(p) = o else { unreachable!() };
                let mut b = p.clone();
                b.spec.node_name = "node-1".into();
                Op::Update { precondition: Precondition::ResourceVersion(p.metadata.resource_version.clone()), object: Object::Pod(b) }
            }).collect();
            store.commit(ops).unwrap();
        }
        eprintln!("bind 10000 in batches of 512: {:?}", t.elapsed());
        for size in [1usize, 8, 64] {
            let t = Instant::now();
            let mut n = 0;
            for chunk in created.chunks(size).take(200) {
                let ops: Vec<Op> = chunk.iter().map(|o| Op::Upsert(o.clone())).collect();
                n += ops.len();
                store.commit(ops).unwrap();
            }
            eprintln!("upsert batches of {size}: {n} in {:?} ({:?}/commit)", t.elapsed(), t.elapsed() / 200);
        }
    }
}
