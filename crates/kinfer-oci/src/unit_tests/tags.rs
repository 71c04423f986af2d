//! Unit tests of `tags.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn link_headers() {
    let base = reqwest::Url::parse("http://127.0.0.1:5000/v2/a/tags/list?n=2").unwrap();
    let mut h = HeaderMap::new();
    h.insert(
        LINK,
        r#"</v2/a/tags/list?last=b&n=2>; rel="next""#.parse().unwrap(),
    );
    assert_eq!(
        next_link(&h, &base).unwrap().as_str(),
        "http://127.0.0.1:5000/v2/a/tags/list?last=b&n=2"
    );
    let many = r#"<https://r.io/v2/a/tags/list?last=x>; rel="prev", <https://r.io/v2/a/tags/list?last=z>; rel=next"#;
    assert_eq!(
        parse_link_header(many),
        [
            (
                "https://r.io/v2/a/tags/list?last=x".to_owned(),
                "prev".to_owned()
            ),
            (
                "https://r.io/v2/a/tags/list?last=z".to_owned(),
                "next".to_owned()
            )
        ]
    );
    assert!(next_link(&HeaderMap::new(), &base).is_none());
}
