//! Error helpers every kinfer crate shares.

/// `err` and its sources joined with ": ", skipping a source whose text the previous level
/// already contains (thiserror messages often embed their source).
pub fn error_chain<E: std::error::Error + ?Sized>(err: &E) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    #[derive(Debug, thiserror::Error)]
    #[error("embeds: {0}")]
    struct Embeds(#[source] Inner);

    #[test]
    fn joins_sources_without_repeats() {
        assert_eq!(error_chain(&Outer(Inner)), "outer: inner");
        assert_eq!(error_chain(&Embeds(Inner)), "embeds: inner");
    }
}
