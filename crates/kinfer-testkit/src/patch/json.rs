//! JSON patch (RFC 6902): add, remove, replace, move, copy, test with JSON pointers (RFC 6901).

use serde_json::Value;

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn tokens(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer
        .strip_prefix('/')
        .ok_or_else(|| format!("invalid pointer {pointer:?}"))?;
    Ok(rest.split('/').map(unescape).collect())
}

fn parent<'a>(doc: &'a mut Value, toks: &[String]) -> Result<&'a mut Value, String> {
    let mut cur = doc;
    for t in toks {
        cur = match cur {
            Value::Object(m) => m
                .get_mut(t)
                .ok_or_else(|| format!("path segment {t:?} not found"))?,
            Value::Array(a) => {
                let i: usize = t.parse().map_err(|_| format!("invalid index {t:?}"))?;
                a.get_mut(i)
                    .ok_or_else(|| format!("index {i} out of range"))?
            }
            _ => return Err(format!("cannot descend into scalar at {t:?}")),
        };
    }
    Ok(cur)
}

fn get(doc: &Value, pointer: &str) -> Result<Value, String> {
    doc.pointer(pointer)
        .cloned()
        .ok_or_else(|| format!("path {pointer:?} not found"))
}

fn add(doc: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    let toks = tokens(pointer)?;
    let Some((last, init)) = toks.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent(doc, init)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
            } else {
                let i: usize = last
                    .parse()
                    .map_err(|_| format!("invalid index {last:?}"))?;
                if i > a.len() {
                    return Err(format!("index {i} out of range"));
                }
                a.insert(i, value);
            }
        }
        _ => return Err(format!("cannot add at {pointer:?}")),
    }
    Ok(())
}

fn remove(doc: &mut Value, pointer: &str) -> Result<Value, String> {
    let toks = tokens(pointer)?;
    let (last, init) = toks.split_last().ok_or("cannot remove the root")?;
    match parent(doc, init)? {
        Value::Object(m) => m
            .remove(last)
            .ok_or_else(|| format!("path {pointer:?} not found")),
        Value::Array(a) => {
            let i: usize = last
                .parse()
                .map_err(|_| format!("invalid index {last:?}"))?;
            if i >= a.len() {
                return Err(format!("index {i} out of range"));
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("cannot remove at {pointer:?}")),
    }
}

/// Apply a JSON patch document to `doc` in place (all or nothing).
pub fn json_patch(doc: &mut Value, document: &Value) -> Result<(), String> {
    let operations = document.as_array().ok_or("a JSON patch must be an array")?;
    let mut work = doc.clone();
    for op in operations {
        let path = op["path"].as_str().ok_or("operation without path")?;
        match op["op"].as_str().unwrap_or_default() {
            "add" => add(&mut work, path, op["value"].clone())?,
            "remove" => {
                remove(&mut work, path)?;
            }
            "replace" => {
                remove(&mut work, path)?;
                add(&mut work, path, op["value"].clone())?;
            }
            "move" => {
                let from = op["from"].as_str().ok_or("move without from")?;
                let v = remove(&mut work, from)?;
                add(&mut work, path, v)?;
            }
            "copy" => {
                let from = op["from"].as_str().ok_or("copy without from")?;
                let v = get(&work, from)?;
                add(&mut work, path, v)?;
            }
            "test" => {
                if get(&work, path)? != op["value"] {
                    return Err(format!("test failed at {path:?}"));
                }
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    *doc = work;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc6902() {
        let mut d = json!({"a": {"b": [1, 2]}, "x": 1});
        let p = json!([
            {"op": "add", "path": "/a/b/-", "value": 3},
            {"op": "replace", "path": "/x", "value": 2},
            {"op": "copy", "from": "/x", "path": "/y"},
            {"op": "move", "from": "/y", "path": "/z"},
            {"op": "remove", "path": "/a/b/0"},
            {"op": "test", "path": "/z", "value": 2}
        ]);
        assert_eq!(json_patch(&mut d, &p), Ok(()));
        assert_eq!(d, json!({"a": {"b": [2, 3]}, "x": 2, "z": 2}));
        assert!(json_patch(&mut d, &json!([{"op": "test", "path": "/x", "value": 9}])).is_err());
    }
}
