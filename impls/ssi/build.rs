//! With the `bdb` feature: our C face of Berkeley DB (`csrc/bdb_shim.c`), compiled here and
//! linked with the installed library (Debian's `libdb5.3-dev`: `db.h` and `libdb-5.3.so`;
//! `.ci/setup.d/13-berkeley-db.sh` installs it).
//!
//! With the `badger` feature: our Go driver of Badger (`go/badger-driver`), built here with the
//! machine's `go` (its modules from the Go module proxy, pinned by its go.sum); the engine finds
//! it through `LB_BADGER_DRIVER`.

fn main() {
    println!("cargo:rerun-if-changed=csrc/bdb_shim.c");
    println!("cargo:rerun-if-env-changed=CARGO_FEATURE_BDB");
    #[cfg(feature = "bdb")]
    bdb();
    #[cfg(feature = "badger")]
    badger();
}

#[cfg(feature = "badger")]
fn badger() {
    for file in ["main.go", "version.go", "go.mod", "go.sum"] {
        println!("cargo:rerun-if-changed=go/badger-driver/{file}");
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("badger-driver");
    let built = std::process::Command::new("go")
        .args(["build", "-mod=readonly", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir("go/badger-driver")
        .status();
    match built {
        Ok(status) if status.success() => {}
        Ok(status) => {
            panic!("the `badger` feature: `go build` of go/badger-driver failed ({status})")
        }
        Err(e) => {
            panic!("the `badger` feature needs Go (the `go` command) to build its driver: {e}")
        }
    }
    println!("cargo:rustc-env=LB_BADGER_DRIVER={}", out.display());
}

#[cfg(feature = "bdb")]
fn bdb() {
    if !std::path::Path::new("/usr/include/db.h").exists() {
        println!(
            "cargo:warning=the `bdb` feature needs Berkeley DB 5.3's headers: \
             apt-get install libdb5.3-dev (or run .ci/setup.d/13-berkeley-db.sh)"
        );
    }
    cc::Build::new()
        .file("csrc/bdb_shim.c")
        .warnings(true)
        .compile("lb_bdb_shim");
    println!("cargo:rustc-link-lib=db-5.3");
}
