use berth_model::model::*;
use std::mem::size_of;
#[test]
fn sizes() {
    println!("Pod {}", size_of::<Pod>());
    println!("ObjectMeta {}", size_of::<ObjectMeta>());
    println!("PodSpec {}", size_of::<PodSpec>());
    println!("PodStatus {}", size_of::<PodStatus>());
    println!("Container {}", size_of::<Container>());
    println!("ResourceRequirements {}", size_of::<ResourceRequirements>());
    println!("ResourceList {}", size_of::<ResourceList>());
    println!("ContainerStatus {}", size_of::<ContainerStatus>());
    println!("PodCondition {}", size_of::<PodCondition>());
    println!("Ignored {}", size_of::<Ignored>());
    println!("Time {}", size_of::<Time>());
    println!("Option<Time> {}", size_of::<Option<Time>>());
    println!("Node {}", size_of::<Node>());
}
