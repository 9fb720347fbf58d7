//! A Rust source file as the module graph reads it: its code without comments and literals,
//! cut into tokens, and the module declarations and paths among them.

/// The source with every comment, string and character literal blanked out: what remains is
/// code, so a path in a doc comment or a `"crate::x"` in a string is not an import.
pub fn code_of(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut code = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let skipped = literal_or_comment_len(&chars, i);
        if skipped > 0 {
            code.push(' ');
            i += skipped;
        } else {
            code.push(chars[i]);
            i += 1;
        }
    }
    code
}

/// How many characters a comment or literal starting at `i` spans; 0 where code starts.
fn literal_or_comment_len(chars: &[char], i: usize) -> usize {
    let at = |k: usize| chars.get(k).copied();
    let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    match (at(i), at(i + 1)) {
        (Some('/'), Some('/')) => until(chars, i, |k| chars[k] == '\n'),
        (Some('/'), Some('*')) => block_comment_len(chars, i),
        (Some('"'), _) => quoted_len(chars, i, '"'),
        (Some('b'), Some('"')) if !word_before => 1 + quoted_len(chars, i + 1, '"'),
        (Some('r' | 'b'), Some('r' | '#' | '"')) if !word_before => raw_string_len(chars, i),
        (Some('\''), _) => char_literal_len(chars, i),
        _ => 0,
    }
}

/// The characters from `i` up to (not including) the first `k` where `end(k)`, or the rest.
fn until(chars: &[char], i: usize, end: impl Fn(usize) -> bool) -> usize {
    (i..chars.len()).find(|&k| end(k)).unwrap_or(chars.len()) - i
}

/// A `/* */` comment, which nests.
fn block_comment_len(chars: &[char], i: usize) -> usize {
    let (mut depth, mut k) = (0, i);
    while k < chars.len() {
        match (chars[k], chars.get(k + 1)) {
            ('/', Some('*')) => (depth, k) = (depth + 1, k + 2),
            ('*', Some('/')) => (depth, k) = (depth - 1, k + 2),
            _ => k += 1,
        }
        if depth == 0 {
            break;
        }
    }
    k - i
}

/// A literal from the quote at `i` to its closing quote, escapes included.
fn quoted_len(chars: &[char], i: usize, quote: char) -> usize {
    let mut k = i + 1;
    while k < chars.len() && chars[k] != quote {
        k += if chars[k] == '\\' { 2 } else { 1 };
    }
    (k + 1).min(chars.len()) - i
}

/// `r"…"`, `r#"…"#`, `br"…"`; 0 where the `r` starts an identifier instead.
fn raw_string_len(chars: &[char], i: usize) -> usize {
    let mut k = i + if chars[i] == 'b' { 1 } else { 0 };
    if chars.get(k) != Some(&'r') {
        return 0;
    }
    k += 1;
    let hashes = until(chars, k, |j| chars[j] != '#');
    k += hashes;
    if chars.get(k) != Some(&'"') {
        return 0;
    }
    let closing: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let body = k + 1;
    (body..chars.len())
        .find(|&j| chars[j..].starts_with(&closing))
        .map_or(chars.len(), |j| j + closing.len())
        - i
}

/// A character literal (`'x'`, `'\n'`, `'\u{2192}'`); 0 for a lifetime or a label (`'a`).
fn char_literal_len(chars: &[char], i: usize) -> usize {
    match chars.get(i + 1) {
        Some('\\') => quoted_len(chars, i, '\''),
        Some(_) if chars.get(i + 2) == Some(&'\'') => 3,
        _ => 0,
    }
}

/// Code cut into tokens: `::`, identifiers (keywords among them) and single punctuation.
pub fn tokens(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code.trim_start();
    while let Some(c) = rest.chars().next() {
        let len = if rest.starts_with("::") {
            2
        } else if c.is_alphanumeric() || c == '_' {
            rest.find(|d: char| !(d.is_alphanumeric() || d == '_'))
                .unwrap_or(rest.len())
        } else {
            c.len_utf8()
        };
        out.push(&rest[..len]);
        rest = rest[len..].trim_start();
    }
    out
}

/// A module path inside a crate: the segments below the crate root (the root is empty).
pub type ModulePath = Vec<String>;

/// What one file says about modules: the ones it declares and the paths it names, each with
/// the module (the file's, or one inline in it) it stands in.
#[derive(Default)]
pub struct Scan {
    /// `(parent, name, inline)`: `mod name;` loads a file, `mod name { … }` does not.
    pub declared: Vec<(ModulePath, String, bool)>,
    /// `use` items: the path, and the name it binds (`None` for a glob).
    pub uses: Vec<(ModulePath, Vec<String>, Option<String>)>,
    /// Paths written in code: `crate::x::f()`, `super::T`, `child::g()`.
    pub paths: Vec<(ModulePath, Vec<String>)>,
}

/// Reads the module declarations, `use` items and paths of one file, the module at `module`.
/// Test-only modules (`#[cfg(test)] mod …`) are left out: what a test reaches for is not a
/// dependency of the module it tests.
pub fn scan(module: &ModulePath, code: &str) -> Scan {
    let t = tokens(code);
    let mut scan = Scan::default();
    // The inline modules open around the current token, with the brace depth each opened at.
    let mut scopes: Vec<(ModulePath, usize)> = vec![(module.clone(), 0)];
    let mut depth = 0;
    let mut i = 0;
    while i < t.len() {
        let scope = scopes.last().expect("the file's module").0.clone();
        match t[i] {
            "#" if t[i + 1..].starts_with(&["[", "cfg", "(", "test", ")", "]"]) => {
                i = skip_test_item(&t, i + 7);
            }
            // `pub(crate)`, `pub(super)`, `pub(in …)`: a visibility, not a path.
            "pub" if t.get(i + 1) == Some(&"(") => {
                i += t[i..].iter().position(|&x| x == ")").unwrap_or(0) + 1;
            }
            "mod" if t.get(i + 2) == Some(&"{") => {
                depth += 1;
                scan.declared
                    .push((scope.clone(), t[i + 1].to_string(), true));
                let mut inner = scope;
                inner.push(t[i + 1].to_string());
                scopes.push((inner, depth));
                i += 3;
            }
            "mod" if t.get(i + 2) == Some(&";") => {
                scan.declared.push((scope, t[i + 1].to_string(), false));
                i += 3;
            }
            "{" => {
                depth += 1;
                i += 1;
            }
            "}" => {
                if scopes.len() > 1 && scopes.last().map(|s| s.1) == Some(depth) {
                    scopes.pop();
                }
                depth -= 1;
                i += 1;
            }
            "use" if i == 0 || t[i - 1] != "::" => {
                let mut trees = Vec::new();
                i = use_tree(&t, i + 1, Vec::new(), &mut trees);
                for (path, name) in trees {
                    scan.uses.push((scope.clone(), path, name));
                }
            }
            word if starts_path(&t, i, word) => {
                let mut path = vec![word.to_string()];
                i += 1;
                while t.get(i) == Some(&"::") && t.get(i + 1).is_some_and(|w| is_word(w)) {
                    path.push(t[i + 1].to_string());
                    i += 2;
                }
                scan.paths.push((scope, path));
            }
            _ => i += 1,
        }
    }
    scan
}

fn is_word(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// A path starts at `word`: `crate`, `super` or `self`, or a lower-case name followed by `::`
/// (a module or an imported name), not in the middle of another path, a macro's `$crate` or
/// a method call.
fn starts_path(t: &[&str], i: usize, word: &str) -> bool {
    let lower = word
        .chars()
        .next()
        .is_some_and(|c| c.is_lowercase() || c == '_');
    let anchored = matches!(word, "crate" | "super" | "self");
    let follows = i > 0 && matches!(t[i - 1], "::" | "$" | ".");
    lower && !follows && (anchored || t.get(i + 1) == Some(&"::"))
}

/// Skips the item after a `#[cfg(test)]` (its further attributes, then up to its `;` or the
/// end of its block); returns the index after it.
fn skip_test_item(t: &[&str], mut i: usize) -> usize {
    let mut depth = 0;
    while i < t.len() {
        match t[i] {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            ";" if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// One `use` tree from `i`, its leaves pushed as (full path, bound name); returns the index
/// after the tree.
fn use_tree(
    t: &[&str],
    mut i: usize,
    mut path: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    loop {
        match t.get(i) {
            Some(&"{") => {
                i += 1;
                while t.get(i).is_some_and(|&x| x != "}") {
                    i = use_tree(t, i, path.clone(), out);
                    if t.get(i) == Some(&",") {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(&"*") => {
                out.push((path, None));
                return i + 1;
            }
            Some(word) => {
                path.push(word.to_string());
                i += 1;
                if t.get(i) == Some(&"::") {
                    i += 1;
                    continue;
                }
                if path.last().map(String::as_str) == Some("self") {
                    path.pop();
                }
                let mut name = path.last().cloned();
                if t.get(i) == Some(&"as") {
                    name = t.get(i + 1).map(|n| n.to_string());
                    i += 2;
                }
                out.push((path, name));
                return i;
            }
            None => return i,
        }
    }
}
