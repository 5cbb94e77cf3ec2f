//! What makes a walk request unwalkable before anything is sent: the one check every face
//! (the config's targets, `walk`'s flags, the MCP tool's arguments) runs. Each face names the
//! field its own way (`witness.name`, `--witness-name`, `witness_name`).

use super::WalkRequest;
use crate::wire::Witness;

/// The longest witness name or vantage (characters): what a record carries, and what a model
/// may give through the MCP server.
pub const MAX_NAME_CHARS: usize = 200;

/// A field of a walk request that comes from a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Origin,
    Endpoint,
    WitnessName,
    Vantage,
}

/// Why a request cannot be walked or filed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The intake refuses a record without it.
    Empty(Field),
    /// Longer than [`MAX_NAME_CHARS`].
    TooLong { field: Field, chars: usize },
    /// Not an https URL a walk may fetch (`why` says what is wrong).
    NotHttps { field: Field, why: String },
}

impl Problem {
    /// The field it is about.
    pub fn field(&self) -> Field {
        match self {
            Problem::Empty(field)
            | Problem::TooLong { field, .. }
            | Problem::NotHttps { field, .. } => *field,
        }
    }

    /// The problem in words, the field called `name` (each face names it its own way: a flag,
    /// an argument).
    pub fn text(&self, name: &str) -> String {
        match self {
            Problem::Empty(_) => {
                format!("{name} must not be empty (the intake refuses a record without one)")
            }
            Problem::TooLong { chars, .. } => {
                format!("{name} is {chars} characters long; at most {MAX_NAME_CHARS} are taken")
            }
            Problem::NotHttps { why, .. } => format!("{name}: {why}"),
        }
    }
}

/// The identity's problems: a name and a vantage, neither empty nor too long.
pub fn witness(w: &Witness) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (field, value) in [(Field::WitnessName, &w.name), (Field::Vantage, &w.vantage)] {
        if value.trim().is_empty() {
            problems.push(Problem::Empty(field));
        }
    }
    for (field, value) in [(Field::WitnessName, &w.name), (Field::Vantage, &w.vantage)] {
        let chars = value.chars().count();
        if chars > MAX_NAME_CHARS {
            problems.push(Problem::TooLong { field, chars });
        }
    }
    problems
}

/// The URLs' problems: the origin and the endpoint (if any) are https URLs.
pub fn urls(origin: &str, endpoint: Option<&str>) -> Vec<Problem> {
    [(Field::Origin, Some(origin)), (Field::Endpoint, endpoint)]
        .into_iter()
        .filter_map(|(field, url)| {
            let why = crate::net::https_url(url?).err()?;
            Some(Problem::NotHttps { field, why })
        })
        .collect()
}

impl WalkRequest {
    /// Everything that makes this request unwalkable: its URLs first, then its identity.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = urls(&self.origin, self.endpoint.as_deref());
        problems.extend(witness(&self.witness));
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unwalkable_field_is_named() {
        let w = Witness {
            name: " ".into(),
            vantage: "v".repeat(MAX_NAME_CHARS + 1),
            key_url: None,
        };
        assert_eq!(
            witness(&w),
            [
                Problem::Empty(Field::WitnessName),
                Problem::TooLong {
                    field: Field::Vantage,
                    chars: MAX_NAME_CHARS + 1
                }
            ]
        );
        let p = urls("http://agent.example", Some("https://agent.example/a2a"));
        assert!(
            matches!(&p[..], [Problem::NotHttps { field: Field::Origin, why }] if why.contains("only https")),
            "{p:?}"
        );
        assert!(urls("https://agent.example", None).is_empty());
    }
}
