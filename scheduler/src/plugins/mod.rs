//! kube-scheduler's default plugins, one module each.
