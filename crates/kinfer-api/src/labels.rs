//! Label keys every kinfer crate shares, and label-key globs.
//!
//! Contract: the `app.kubernetes.io/*` keys belong to the builders (they are in selectors that
//! are immutable, some keep an upstream operator's values for adoption); the reconcile engine
//! selects children on its own keys, [`KINFER_MANAGED_BY`] plus `<domain>/<controller>.name`,
//! and never writes `app.kubernetes.io/*`. [`glob_match`] is Go's `filepath.Match` (the syntax
//! upstream's label-propagation globs use), iterative and bounded.

pub mod aim;

/// `app.kubernetes.io/name`: the application (`modelservice`, `aim-service`, `epp`, ...).
pub const NAME: &str = "app.kubernetes.io/name";
/// `app.kubernetes.io/instance`: the parent object's name.
pub const INSTANCE: &str = "app.kubernetes.io/instance";
/// `app.kubernetes.io/component`: the part of the application (`decode`, `epp`, ...).
pub const COMPONENT: &str = "app.kubernetes.io/component";
/// `app.kubernetes.io/managed-by`: the operator, as the builders write it.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// `app.kubernetes.io/part-of`.
pub const PART_OF: &str = "app.kubernetes.io/part-of";
/// `kinfer.dev/track`: `stable` or `canary` on canary-split workloads.
pub const TRACK: &str = "kinfer.dev/track";
/// `kinfer.dev/managed-by`: the kinfer operator (its field manager). The reconcile engine
/// stamps it on every object it applies and selects its children by it; it is on metadata
/// only, never in selectors or pod templates.
pub const KINFER_MANAGED_BY: &str = "kinfer.dev/managed-by";

/// `kinfer.dev/parent-namespace`: the namespace of the parent of an object no owner reference
/// can reach (cluster-scoped RBAC). With [`PARENT_NAME`] and [`KINFER_MANAGED_BY`] it selects
/// exactly one parent's cluster-scoped objects (for watches and finalizer cleanup).
pub const PARENT_NAMESPACE: &str = "kinfer.dev/parent-namespace";
/// `kinfer.dev/parent-name`: the name of that parent, as a label value (sanitised; a name over
/// 63 characters is cut and hashed).
pub const PARENT_NAME: &str = "kinfer.dev/parent-name";
/// `kinfer.dev/parent`: annotation with the exact `<namespace>/<name>` of that parent, to map
/// an event back to it when the name label had to be hashed.
pub const PARENT_ANNOTATION: &str = "kinfer.dev/parent";

/// The longest glob [`glob_match`] evaluates; longer patterns match nothing.
pub const MAX_GLOB_LEN: usize = 256;

/// Go's `filepath.Match` over one string: `*` matches any run of characters except `/`, `?`
/// one character except `/`, `[abc]`, `[a-z]`, `[^a]` classes, `\` escapes. A malformed
/// pattern, or one longer than [`MAX_GLOB_LEN`], matches nothing.
///
/// Iterative like Go's: the pattern is split into chunks at `*`, and each starred chunk is
/// tried at each position once, so the cost is O(pattern × text) whatever the input.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    if pattern.len() > MAX_GLOB_LEN {
        return false;
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let mut name: &[char] = &text.chars().collect::<Vec<char>>();
    let mut pattern: &[char] = &pattern;
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            return !name.contains(&'/');
        }
        match match_chunk(chunk, name) {
            Err(()) => return false,
            Ok(Some(t)) if t.is_empty() || !pattern.is_empty() => {
                name = t;
                continue;
            }
            Ok(_) => {}
        }
        if star {
            let mut i = 0;
            while i < name.len() && name[i] != '/' {
                match match_chunk(chunk, &name[i + 1..]) {
                    Err(()) => return false,
                    Ok(Some(t)) => {
                        if !pattern.is_empty() || t.is_empty() {
                            name = t;
                            continue 'pattern;
                        }
                    }
                    Ok(None) => {}
                }
                i += 1;
            }
        }
        return false;
    }
    name.is_empty()
}

/// Leading stars, then the chunk up to the next `*` outside a class.
fn scan_chunk(pattern: &[char]) -> (bool, &[char], &[char]) {
    let mut p = pattern;
    let mut star = false;
    while p.first() == Some(&'*') {
        p = &p[1..];
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' if i + 1 < p.len() => i += 1,
            '[' => in_range = true,
            ']' => in_range = false,
            '*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &p[..i], &p[i..])
}

/// Match `chunk` (no `*`) at the start of `s`: the rest of `s`, `None` on a mismatch,
/// `Err` on a malformed chunk.
fn match_chunk<'a>(mut chunk: &[char], mut s: &'a [char]) -> Result<Option<&'a [char]>, ()> {
    let mut failed = false;
    while let Some(&c) = chunk.first() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match c {
            '[' => {
                let mut r = '\0';
                if !failed {
                    r = s[0];
                    s = &s[1..];
                }
                chunk = &chunk[1..];
                let negated = chunk.first() == Some(&'^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if chunk.first() == Some(&']') && ranges > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = escaped(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk.first() == Some(&'-') {
                        let (h, rest) = escaped(&chunk[1..])?;
                        hi = h;
                        chunk = rest;
                    }
                    if lo <= r && r <= hi {
                        matched = true;
                    }
                    ranges += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    if s[0] == '/' {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
            _ => {
                if c == '\\' {
                    chunk = &chunk[1..];
                    if chunk.is_empty() {
                        return Err(());
                    }
                }
                if !failed {
                    if chunk[0] != s[0] {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
        }
    }
    Ok((!failed).then_some(s))
}

/// One (possibly escaped) class character and the rest; malformed when nothing follows it.
fn escaped(chunk: &[char]) -> Result<(char, &[char]), ()> {
    let mut chunk = chunk;
    match chunk.first() {
        None | Some('-' | ']') => return Err(()),
        Some('\\') => {
            chunk = &chunk[1..];
            if chunk.is_empty() {
                return Err(());
            }
        }
        Some(_) => {}
    }
    let rest = &chunk[1..];
    if rest.is_empty() {
        return Err(());
    }
    Ok((chunk[0], rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filepath_match_semantics() {
        let cases = [
            ("team-*", "team-a", true),
            ("team-*", "team-a/b", false),
            ("*", "", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("?x", "ax", true),
            ("?x", "/x", false),
            ("[a-c]1", "b1", true),
            ("[^a-c]1", "b1", false),
            ("[^a-c]1", "d1", true),
            ("\\*", "*", true),
            ("[", "[", false),
            ("a\\", "a", false),
            ("example.com/*", "example.com/x", true),
            ("*.name", "a.name", true),
        ];
        for (p, t, want) in cases {
            assert_eq!(glob_match(p, t), want, "{p} {t}");
        }
    }

    #[test]
    fn adversarial_patterns_are_fast_and_capped() {
        let p = "*a".repeat(100);
        let t = "a".repeat(63) + "b";
        assert!(!glob_match(&p, &t));
        assert!(!glob_match(&"*".repeat(MAX_GLOB_LEN + 1), "x"));
    }
}
