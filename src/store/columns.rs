//! How the filing states are kept in SQLite: each as its one text form (`as_str`), read back
//! with `FromStr` (a text no state has is an error naming it, not a silent default).

use crate::filing::bind::BindState;
use crate::filing::{AnswerKind, Outcome, SubmissionState};
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

macro_rules! text_column {
    ($($name:ty),+) => {$(
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl FromSql for $name {
            fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
                v.as_str()?
                    .parse::<$name>()
                    .map_err(|e| FromSqlError::Other(e.into()))
            }
        }
    )+};
}

text_column!(SubmissionState, AnswerKind, Outcome, BindState);
