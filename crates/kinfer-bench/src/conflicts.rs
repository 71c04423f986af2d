//! The 409 answers of a run, as notes: one per kind (client, verb, resource, message), most
//! frequent first, so a reader sees who conflicted with whom (a server-side apply conflict
//! names the managers owning the fields).

use kinfer_testkit::{CONFLICT_LOG, Conflict};

/// How many kinds of conflict the notes describe.
const CONFLICT_NOTES: usize = 5;

/// One note per kind of 409 (client, verb, resource, message), most frequent first: who
/// conflicted with whom (a server-side apply conflict names the managers owning the fields).
/// The test cluster logs only the last [`CONFLICT_LOG`] 409s of each phase, so when `log`
/// holds fewer than the `total` counted, a first note says the kinds are of those only.
pub fn conflict_notes(log: &[Conflict], total: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if (log.len() as u64) < total {
        notes.push(format!(
            "409 kinds below: of the last {CONFLICT_LOG} per phase ({} of {total} logged)",
            log.len()
        ));
    }
    let mut kinds: std::collections::BTreeMap<(&str, &str, &str, String), (usize, &str)> =
        std::collections::BTreeMap::new();
    for c in log {
        // Messages quote the object's name; the kind of conflict is the rest.
        let name = c.object.rsplit('/').next().unwrap_or_default();
        let message = if name.is_empty() {
            c.message.clone()
        } else {
            c.message.replace(&format!("\"{name}\""), "\"<name>\"")
        };
        let entry = kinds
            .entry((&c.client, &c.verb, &c.resource, message))
            .or_insert((0, &c.object));
        entry.0 += 1;
    }
    let mut sorted: Vec<_> = kinds.into_iter().collect();
    sorted.sort_by_key(|(_, (n, _))| std::cmp::Reverse(*n));
    notes.extend(sorted.into_iter().take(CONFLICT_NOTES).map(
        |((client, verb, resource, message), (n, example))| {
            let message: String = message.chars().take(240).collect();
            format!("409 x{n}: {client} {verb} {resource} (e.g. {example}): {message}")
        },
    ));
    notes
}

#[cfg(test)]
mod tests {
    use super::{Conflict, conflict_notes};

    #[test]
    fn conflicts_are_grouped_by_client_request_and_message() {
        let c = |object: &str, message: &str| Conflict {
            client: "op".into(),
            verb: "patch".into(),
            resource: "things".into(),
            object: object.into(),
            message: message.into(),
        };
        let log = [
            c(
                "ns/a",
                "Operation cannot be fulfilled on things \"a\": modified",
            ),
            c(
                "ns/b",
                "Operation cannot be fulfilled on things \"b\": modified",
            ),
            c(
                "ns/c",
                "Apply failed with 1 conflict: conflict with \"x\": .spec",
            ),
        ];
        let notes = conflict_notes(&log, 3);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("409 x2: op patch things (e.g. ns/a)"),
            "{notes:?}"
        );
        assert!(
            notes[0].contains("things \"<name>\": modified"),
            "{notes:?}"
        );
        assert!(notes[1].starts_with("409 x1:"), "{notes:?}");

        // More counted than logged: the notes say they describe the logged ones only.
        let notes = conflict_notes(&log, 300);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes[0].contains("of the last 256 per phase (3 of 300 logged)"),
            "{notes:?}"
        );
    }
}
