//! A crate's module graph: which module imports which, each import resolved to the module that
//! defines what it names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::source::{code_of, scan, ModulePath, Scan};

/// The modules of one crate, each with its file, and the imports between them.
pub struct ModuleGraph {
    /// Every module kept in a file of its own, by path.
    pub files: BTreeMap<ModulePath, PathBuf>,
    /// `from → to`, with one path of `from` that names something of `to`.
    pub imports: BTreeMap<ModulePath, BTreeMap<ModulePath, String>>,
}

/// What a module graph is read from: the file at a path, if there is one (the workspace's files,
/// or a test's own).
pub type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// The module graph of the crate whose root file is `root` (a `lib.rs` or `main.rs`).
///
/// An import counts where it resolves: `crate::x::T` is an import of the module that defines
/// `T`, followed through every `use` that merely passes it on (`pub use inner::T` in `x` is an
/// import of `inner` by `x`, and `crate::x::T` then one of `inner`). A module's imports of
/// its own ancestors other than the crate root are not counted: a file of a directory module
/// reads what its parent keeps for its files (`super::`), and the parent is made of them. The
/// crate root is no such home: a module importing from `lib.rs` while `lib.rs` imports it is a
/// cycle like any other.
pub fn module_graph(root: &Path, read: Read) -> ModuleGraph {
    let scans = scan_crate(root, read);
    let mut modules: BTreeSet<ModulePath> = scans.keys().cloned().collect();
    let mut bound: HashMap<(ModulePath, String), Vec<String>> = HashMap::new();
    for scan in scans.values() {
        for (parent, name, _) in &scan.declared {
            modules.insert(child(parent, name));
        }
        for (scope, path, name) in &scan.uses {
            if let Some(name) = name {
                bound.insert((scope.clone(), name.clone()), path.clone());
            }
        }
    }
    let resolver = Resolver {
        modules: &modules,
        bound: &bound,
    };
    let mut imports: BTreeMap<ModulePath, BTreeMap<ModulePath, String>> = BTreeMap::new();
    for (file_module, scan) in &scans {
        let named = scan.uses.iter().map(|(scope, path, _)| (scope, path));
        for (scope, path) in named.chain(scan.paths.iter().map(|(s, p)| (s, p))) {
            let Some(target) = resolver.defining_module(scope, path) else {
                continue;
            };
            let target = file_of(&target, &scans);
            let own_ancestor = !target.is_empty() && file_module.starts_with(&target);
            if target != *file_module && !own_ancestor {
                imports
                    .entry(file_module.clone())
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| path.join("::"));
            }
        }
    }
    let files = scans
        .keys()
        .map(|m| (m.clone(), file_path(root, m)))
        .collect();
    ModuleGraph { files, imports }
}

fn child(parent: &ModulePath, name: &str) -> ModulePath {
    let mut path = parent.clone();
    path.push(name.to_string());
    path
}

/// Scans the root file and every file a `mod name;` loads, from the crate root down.
fn scan_crate(root: &Path, read: Read) -> BTreeMap<ModulePath, Scan> {
    let mut scans = BTreeMap::new();
    let mut pending = vec![Vec::new()];
    while let Some(module) = pending.pop() {
        let Some(source) =
            read(&file_path(root, &module)).or_else(|| read(&dir_file(root, &module)))
        else {
            continue;
        };
        let scan = scan(&module, &code_of(&source));
        for (parent, name, inline) in &scan.declared {
            if !inline {
                pending.push(child(parent, name));
            }
        }
        scans.insert(module, scan);
    }
    scans
}

/// Where module `module` of the crate rooted at `root` is: `a/b.rs` (or `a/b/mod.rs`, see
/// [`dir_file`]); the root itself for the empty path.
fn file_path(root: &Path, module: &ModulePath) -> PathBuf {
    let Some((last, parents)) = module.split_last() else {
        return root.to_path_buf();
    };
    let mut path = root
        .parent()
        .expect("a crate root is in a folder")
        .to_path_buf();
    path.extend(parents);
    path.push(format!("{last}.rs"));
    path
}

fn dir_file(root: &Path, module: &ModulePath) -> PathBuf {
    let mut path = root
        .parent()
        .expect("a crate root is in a folder")
        .to_path_buf();
    path.extend(module);
    path.push("mod.rs");
    path
}

/// The module kept in a file that holds `module` (itself, or the file it is inline in).
fn file_of(module: &ModulePath, files: &BTreeMap<ModulePath, Scan>) -> ModulePath {
    (0..=module.len())
        .rev()
        .map(|n| module[..n].to_vec())
        .find(|m| files.contains_key(m))
        .unwrap_or_default()
}

struct Resolver<'a> {
    modules: &'a BTreeSet<ModulePath>,
    /// What each `use` binds, by the module it stands in and the name.
    bound: &'a HashMap<(ModulePath, String), Vec<String>>,
}

/// How many `use` items a name may be passed through before the resolver gives up (a chain
/// that long would be a loop).
const MAX_HOPS: usize = 32;

impl Resolver<'_> {
    /// The module that defines what `path`, written in module `scope`, names; `None` for a
    /// path outside the crate (another crate, the standard library, a local variable's field).
    fn defining_module(&self, scope: &ModulePath, path: &[String]) -> Option<ModulePath> {
        let absolute = self.absolute(scope, path, 0)?;
        self.follow(absolute, 0)
    }

    /// `path` from the crate root, as written in `scope`.
    fn absolute(&self, scope: &ModulePath, path: &[String], hops: usize) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some([scope.as_slice(), rest].concat()),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                let base = &scope[..scope.len().checked_sub(ups)?];
                Some([base, &path[ups..]].concat())
            }
            name if self.modules.contains(&child(scope, name)) => {
                Some([scope.as_slice(), path].concat())
            }
            name => {
                let bound = self.bound.get(&(scope.clone(), name.to_string()))?;
                if hops >= MAX_HOPS || bound.as_slice() == path {
                    return None;
                }
                let mut resolved = self.absolute(scope, bound, hops + 1)?;
                resolved.extend_from_slice(rest);
                Some(resolved)
            }
        }
    }

    /// The module an absolute path's item is defined in: its longest module prefix, or, where
    /// that module only imports the next name, the module the import leads to.
    fn follow(&self, absolute: Vec<String>, hops: usize) -> Option<ModulePath> {
        let depth = (0..=absolute.len())
            .rev()
            .find(|&n| self.modules.contains(&absolute[..n].to_vec()) || n == 0)?;
        let module = absolute[..depth].to_vec();
        let Some(name) = absolute.get(depth) else {
            return Some(module);
        };
        match self.bound.get(&(module.clone(), name.clone())) {
            Some(bound) if hops < MAX_HOPS => {
                let mut next = self.absolute(&module, bound, 0)?;
                next.extend_from_slice(&absolute[depth + 1..]);
                self.follow(next, hops + 1)
            }
            _ => Some(module),
        }
    }
}
