// Compiles the AIDL interfaces at build time with rsbinder-aidl into
// $OUT_DIR/rsbecho.rs, which src/lib.rs includes.
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from("aidl/rsbecho");
    for name in ["ICallback.aidl", "IEcho.aidl"] {
        println!("cargo:rerun-if-changed={}", dir.join(name).display());
    }
    rsbinder_aidl::Builder::new()
        .source(dir.join("ICallback.aidl"))
        .source(dir.join("IEcho.aidl"))
        .output(PathBuf::from("rsbecho.rs"))
        .generate()
        .expect("rsbinder-aidl: generating rsbecho.rs");
}
