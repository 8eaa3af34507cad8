//! Generates the berth.v1 gRPC code and the etcd v3 client code with the vendored protoc, so a fresh machine needs
//! nothing but cargo.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // tonic-prost-build runs the protoc named by PROTOC.
    std::env::set_var("PROTOC", protoc);
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_prost_build::configure()
        .codec_path("crate::codec::SmallBufferCodec")
        // Written by hand (`src/object.rs`): its JSON is shared text, not a String.
        .extern_path(".berth.v1.Object", "crate::object::Object")
        .file_descriptor_set_path(out.join("berth_descriptor.bin"))
        .compile_protos(&["proto/berth.proto"], &["proto"])?;
    println!("cargo:rerun-if-changed=proto/berth.proto");
    // The slice of etcd's v3 API the etcd store speaks: clients only.
    tonic_prost_build::configure()
        .build_server(false)
        .compile_protos(&["proto/etcd.proto"], &["proto"])?;
    println!("cargo:rerun-if-changed=proto/etcd.proto");
    Ok(())
}
