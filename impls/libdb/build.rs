//! Builds the real libdb from its source, in three flavours, and links each with the harness.
//!
//! The source comes from `LOADBEARING_LIBDB_SRC`: the release tarball
//! (`libdb-5.3.34-c4811dc.tar.gz`) or an unpacked tree of berkeleydb/libdb at c4811dc. It is
//! configured once and built once per flavour into `<target>/libdb/<key>/`, where the key
//! hashes the source and our patches, so a second build profile or a clean of this crate
//! reuses it:
//!
//! - `prefix`: as released (the #136 commit window open);
//! - `fix`: patches 0001-0003 (the #151 fix at both sites);
//! - `readerunfixed`: patches 0001-0002 (the writer site fixed, mpool's reader site not).
//!
//! Each patch must apply without fuzz and be found wholly applied afterwards. Each flavour's
//! objects are then linked with `csrc/harness.c` into one relocatable object, with
//! `--wrap=__lock_vec --wrap=__lock_sicommit` (the hooks), and every symbol but the flavour's
//! `lbdb_<flavour>_*` calls made local, so the three libdbs coexist in one binary.

use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

const FLAVOURS: [(&str, &[&str]); 3] = [
    ("prefix", &[]),
    (
        "fix",
        &[
            "0001-publish-sichecked-at-the-pivot-check.patch",
            "0002-writer-site-asks-past-check.patch",
            "0003-reader-site-asks-past-check.patch",
        ],
    ),
    (
        "readerunfixed",
        &[
            "0001-publish-sichecked-at-the-pivot-check.patch",
            "0002-writer-site-asks-past-check.patch",
        ],
    ),
];

const SOURCE_VAR: &str = "LOADBEARING_LIBDB_SRC";

fn main() {
    let manifest = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env("OUT_DIR"));
    println!("cargo:rerun-if-env-changed={SOURCE_VAR}");
    println!("cargo:rerun-if-changed=patches");
    println!("cargo:rerun-if-changed=csrc/harness.c");
    let source = match std::env::var_os(SOURCE_VAR) {
        Some(s) if !s.is_empty() => PathBuf::from(s),
        _ => fail(&format!(
            "{SOURCE_VAR} is not set: point it at the libdb 5.3.34 source, the tarball \
             libdb-5.3.34-c4811dc.tar.gz or a checkout of berkeleydb/libdb at c4811dc \
             (docs/libdb.md says where to get it)"
        )),
    };
    if !source.exists() {
        fail(&format!("{SOURCE_VAR}={} does not exist", source.display()));
    }
    println!("cargo:rerun-if-changed={}", source.display());
    let patches = manifest.join("patches");
    let key = cache_key(&source, &patches);
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out.
    let target = out.ancestors().nth(4).unwrap_or(&out).to_path_buf();
    let cache = target.join("libdb").join(format!("{key:016x}"));
    if !FLAVOURS
        .iter()
        .all(|(f, _)| cache.join(f).join("libdb.a").exists())
    {
        build_flavours(&source, &patches, &cache);
    }
    for (flavour, _) in FLAVOURS {
        link_flavour(flavour, &cache.join(flavour), &manifest, &out);
    }
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=dylib=pthread");
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| fail(&format!("cargo did not set {name}")))
}

fn fail(message: &str) -> ! {
    eprintln!("error: loadbearing-libdb: {message}");
    panic!("loadbearing-libdb: {message}");
}

/// The source (its bytes, or for a tree its path) and every patch's text.
fn cache_key(source: &Path, patches: &Path) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if source.is_file() {
        fs::read(source)
            .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", source.display())))
            .hash(&mut h);
    } else {
        source.hash(&mut h);
    }
    let mut names: Vec<PathBuf> = fs::read_dir(patches)
        .unwrap_or_else(|e| fail(&format!("cannot list {}: {e}", patches.display())))
        .map(|e| e.expect("a patch entry").path())
        .collect();
    names.sort();
    for p in names {
        fs::read(&p).expect("a readable patch").hash(&mut h);
    }
    h.finish()
}

fn run(what: &str, cmd: &mut Command) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| fail(&format!("{what}: cannot run {cmd:?}: {e}")));
    if !status.success() {
        fail(&format!("{what} failed ({status}): {cmd:?}"));
    }
}

/// Unpacks and configures the source once, then builds libdb.a per flavour into `cache`.
fn build_flavours(source: &Path, patches: &Path, cache: &Path) {
    let work = cache.with_extension(format!("build-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).expect("a build directory");
    let tree = work.join("src");
    if source.is_file() {
        fs::create_dir_all(&tree).expect("an unpack directory");
        run(
            "unpacking the libdb tarball",
            Command::new("tar")
                .args(["xzf"])
                .arg(source)
                .args(["--strip-components=1", "-C"])
                .arg(&tree),
        );
    } else {
        run(
            "copying the libdb tree",
            Command::new("cp").arg("-a").arg(source).arg(&tree),
        );
    }
    if !tree.join("dist/configure").exists() {
        fail(&format!(
            "{} is not the libdb source (no dist/configure)",
            source.display()
        ));
    }
    eprintln!("loadbearing-libdb: configuring libdb");
    run(
        "configure",
        Command::new("../dist/configure")
            .args(["--disable-shared", "--enable-static"])
            // The objects end up in Rust's position-independent executables.
            .env("CFLAGS", "-O2 -fPIC")
            .current_dir(tree.join("build_unix"))
            .stdout(std::process::Stdio::null()),
    );
    let jobs = std::env::var("NUM_JOBS").unwrap_or_else(|_| "2".into());
    for (flavour, applied) in FLAVOURS {
        let dir = work.join(flavour);
        run(
            "copying the configured tree",
            Command::new("cp").arg("-a").arg(&tree).arg(&dir),
        );
        for patch in applied {
            apply(&dir, &patches.join(patch));
        }
        check_flavour(flavour, &dir);
        eprintln!("loadbearing-libdb: building libdb.a ({flavour})");
        run(
            "make libdb.a",
            Command::new("make")
                .args(["-j", &jobs, "libdb.a"])
                .current_dir(dir.join("build_unix"))
                .stdout(std::process::Stdio::null()),
        );
        let keep = work.join("done").join(flavour);
        fs::create_dir_all(&keep).expect("a flavour directory");
        for file in ["libdb.a", "db.h"] {
            fs::copy(dir.join("build_unix").join(file), keep.join(file))
                .unwrap_or_else(|e| fail(&format!("{flavour}: no {file}: {e}")));
        }
    }
    let _ = fs::remove_dir_all(cache);
    fs::create_dir_all(cache.parent().expect("a cache parent")).expect("the cache directory");
    fs::rename(work.join("done"), cache).expect("the built flavours in place");
    let _ = fs::remove_dir_all(&work);
}

/// Applies `patch` to `dir` exactly (no fuzz, no offset guessing beyond patch's own), then
/// checks it is wholly there (it reverses cleanly).
fn apply(dir: &Path, patch: &Path) {
    let name = patch.file_name().unwrap().to_string_lossy().to_string();
    let patch_cmd = |extra: &[&str]| {
        let mut c = Command::new("patch");
        c.args(["-p1", "--batch", "--fuzz=0", "--quiet"])
            .args(extra)
            .arg("-i")
            .arg(patch)
            .current_dir(dir);
        c
    };
    run(
        &format!("{name} does not apply to this libdb source"),
        &mut patch_cmd(&["--forward", "--dry-run"]),
    );
    run(&format!("applying {name}"), &mut patch_cmd(&["--forward"]));
    run(
        &format!("{name} is not wholly applied"),
        &mut patch_cmd(&["--reverse", "--dry-run"]),
    );
}

/// What each flavour's source must say at the two sites, read back from the patched files.
fn check_flavour(flavour: &str, dir: &Path) {
    let count = |file: &str| {
        fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| fail(&format!("{flavour}: cannot read {file}: {e}")))
            .matches("TXN_SI_PAST_CHECK(")
            .count()
    };
    let writer = count("src/lock/lock.c");
    let reader = count("src/mp/mp_fget.c");
    let expected = match flavour {
        "prefix" => (0, 0),
        "fix" => (2, 1),
        _ => (2, 0),
    };
    if (writer, reader) != expected {
        fail(&format!(
            "{flavour}: TXN_SI_PAST_CHECK at the writer site {writer}x and the reader site \
             {reader}x, expected {expected:?}"
        ));
    }
}

/// The flavour's libdb objects and the harness as one relocatable object with the hooks wrapped
/// and only `lbdb_<flavour>_*` global, archived as liblbdb_<flavour>.a in `out`.
fn link_flavour(flavour: &str, built: &Path, manifest: &Path, out: &Path) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let harness = out.join(format!("harness_{flavour}.o"));
    run(
        "compiling the harness",
        Command::new(&cc)
            .args(["-c", "-O2", "-fPIC", "-Wall", "-Werror"])
            .arg(format!("-DLB_FLAVOUR={flavour}"))
            .arg("-I")
            .arg(built)
            .arg(manifest.join("csrc/harness.c"))
            .arg("-o")
            .arg(&harness),
    );
    let objs = out.join(format!("objs_{flavour}"));
    let _ = fs::remove_dir_all(&objs);
    fs::create_dir_all(&objs).expect("an objects directory");
    run(
        "unpacking libdb.a",
        Command::new("ar")
            .arg("x")
            .arg(built.join("libdb.a"))
            .current_dir(&objs),
    );
    let mut members: Vec<PathBuf> = fs::read_dir(&objs)
        .expect("the objects")
        .map(|e| e.expect("an object").path())
        .collect();
    members.sort();
    let joined = out.join(format!("lbdb_{flavour}_joined.o"));
    run(
        "linking libdb with the hooks",
        Command::new("ld")
            .args(["-r", "--wrap=__lock_vec", "--wrap=__lock_sicommit", "-o"])
            .arg(&joined)
            .arg(&harness)
            .args(&members),
    );
    let local = out.join(format!("lbdb_{flavour}.o"));
    run(
        "keeping only the flavour's calls global",
        Command::new("objcopy")
            .arg("-w")
            .arg(format!("--keep-global-symbol=lbdb_{flavour}_*"))
            .arg(&joined)
            .arg(&local),
    );
    let archive = out.join(format!("liblbdb_{flavour}.a"));
    let _ = fs::remove_file(&archive);
    run(
        "archiving the flavour",
        Command::new("ar").arg("rcs").arg(&archive).arg(&local),
    );
    let _ = fs::remove_dir_all(&objs);
    println!("cargo:rustc-link-lib=static=lbdb_{flavour}");
}
